"""A code workflow's `ctx.map` over N branches end to end on the local stack (real handlers on moto,
virtual time): each branch runs one step, then sleeps an hour (issue 27's workload).

    python benchmarks/bench_code_width_local.py [--sizes 1000] [--old /work/main/layers/orbit]

Prints, per size, the wall time from the start to idle (every branch asleep), the threads alive then
(every branch parked), and the wall time from the wake-up to completion.
`--old` runs the same in a child process on another checkout's orbit package, for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

WORKERS = str(Path(__file__).resolve().parents[1] / "tests" / "e2e" / "fixtures" / "branch_workers.py")


def measure(n: int) -> dict[str, float]:
    import orbit
    from orbit.local import LocalStack

    @orbit.workflow("bench-width-map")
    def wide(ctx, items):
        def one(c, item):
            out = c.step("br.echo", item)
            c.sleep("1h")
            return out

        return len(ctx.map(items, one))

    peak = [threading.active_count()]

    def note() -> None:
        peak[0] = max(peak[0], threading.active_count())

    with LocalStack(mode="inprocess", workers=[WORKERS]) as st:
        st.register(wide)
        t0 = time.perf_counter()
        eid = st.start("bench-width-map", list(range(n)))
        st.run_until_idle()
        idle_s = time.perf_counter() - t0
        note()
        t1 = time.perf_counter()
        st.advance(3600 + 5)
        desc = st.run_until_done(eid)
        done_s = time.perf_counter() - t1
        assert desc["status"] == "COMPLETED" and desc["output"] == n, desc
    return {"n": n, "idle_s": idle_s, "done_s": done_s, "threads_peak": peak[0]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000")
    p.add_argument("--old")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        print(json.dumps(measure(a.one)))
        return
    here = str(Path(__file__).resolve().parents[1] / "layers" / "orbit")
    print(f"{'checkout':<8} {'branches':>8} {'start to idle':>14} {'wake to done':>13} "
          f"{'threads at idle':>15}")
    for label, path in [("new", here)] + ([("old", a.old)] if a.old else []):
        for n in [int(s) for s in a.sizes.split(",")]:
            out = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True,
                                 text=True, env={**os.environ, "PYTHONPATH": os.path.abspath(path)})
            if out.returncode:
                sys.exit(out.stderr[-2000:])
            f = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{label:<8} {n:>8,} {f['idle_s']:>12.1f} s {f['done_s']:>11.1f} s "
                  f"{f['threads_peak']:>15,}")


if __name__ == "__main__":
    main()
