"""Wall time of a 7-day sleep on the local stack (virtual time skips the wait).

    python benchmarks/bench_virtual_sleep.py [--runs 5]

Runs examples/trial_reminder.yaml (a welcome email, a 7-day sleep, a reminder)
on `LocalStack(mode="inprocess")` and prints, per run, the wall time from the
start to COMPLETED and the virtual time that passed. About 40 emulated AWS
calls; measured 1.5 s median (1.8 s max) on 2 cores shared with 7 other test
runs. Without time-skipping a run would take 7 days.
tests/e2e/test_local_stack.py checks that it completes, not how fast.
"""

from __future__ import annotations

import argparse
import statistics
import time

DAY_MS = 86_400_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="executions to time (default 5)")
    args = ap.parse_args()
    from orbit.local import LocalStack

    walls = []
    with LocalStack(mode="inprocess", workers=["examples/workers/misc.py"]) as stack:
        stack.register("examples/trial_reminder.yaml")
        for i in range(args.runs):
            eid = stack.start("trial-reminder", {"email": f"user{i}@example.com"})
            v0, w0 = stack.now_ms(), time.perf_counter()
            desc = stack.run_until_done(eid)
            wall = time.perf_counter() - w0
            assert desc["status"] == "COMPLETED", desc
            walls.append(wall)
            days = (stack.now_ms() - v0) / DAY_MS
            print(f"run {i + 1}: {wall:.3f} s wall for {days:.2f} days of virtual time")
    print(f"7-day sleep, wall time: median {statistics.median(walls):.3f} s, max {max(walls):.3f} s "
          f"over {len(walls)} runs")


if __name__ == "__main__":
    main()
