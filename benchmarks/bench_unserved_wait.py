"""What a task no worker serves costs while it waits (docs/decisions/app-cli-workers-and-retire.md).

    python benchmarks/bench_unserved_wait.py [--messages 50] [--hours 1]

Starts `--messages` executions of a one-step definition whose task nothing serves, on the local
stack (in-process moto), then moves the clock on 5 minutes at a time for `--hours`: every round,
each message comes back to the example worker, which finds no function, checks the history and
sends it back. Prints the wall time per return and the worker invocations.
"""

from __future__ import annotations

import argparse
import logging
import time

from orbit.local import LocalStack

LATE = "orbit: 1\nname: late\nsteps:\n  a: {task: late.work}\n"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--messages", type=int, default=50)
    p.add_argument("--hours", type=float, default=1.0)
    args = p.parse_args()
    logging.disable(logging.WARNING)  # one warning per waiting message: not what is measured
    rounds = int(args.hours * 12)
    with LocalStack(mode="inprocess") as st:
        st.register(LATE)
        ids = [st.start("late", {}) for _ in range(args.messages)]
        st.run_until_idle()
        [worker] = [p for p in st.cloud.pollers if p.mapping.function.logical_id == "ExampleWorkerFunction"]
        before = worker.invocations
        t0 = time.perf_counter()
        for _ in range(rounds):
            st.advance(300)
        dt = time.perf_counter() - t0
        assert all(st.describe(i)["steps"]["a"]["status"] == "SCHEDULED" for i in ids)
    print(f"{args.messages} waiting messages, {rounds} returns each: {dt:.2f} s wall, "
          f"{worker.invocations - before} worker invocations, {dt / (args.messages * rounds) * 1000:.2f} ms "
          "per return")


if __name__ == "__main__":
    main()
