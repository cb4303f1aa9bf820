"""Decision cost per branch of a code-workflow parallel: 10 branches against 1,000.

    python benchmarks/bench_branches.py [--sizes 10,1000] [--rounds 3]

Each branch runs a step, then sleeps an hour: `ctx.parallel(*[branch] * n)`. The whole
execution is driven through the real pure decision (`orbit.core.decider.decide.decide`): the
start, one result message per step (each resumes one branch, which starts its timer), one
wake-up per timer (each ends one branch), the last of which records the group and completes
the workflow. The figure is the total decision time divided by the number of branches, with
the decider's instance cache on (as in a warm Lambda). Target: 1,000 branches within 2x of 10.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from orbit.core.decider.decide import decide
from orbit.core.history.messages import ResultMessage, StartMessage, WakeMessage
from orbit.core.history.model import apply
from orbit.core.history.state import ExecutionState
from orbit.core.runtime import code as code_runtime
from orbit.workflow import CodeRegistry, workflow

REGISTRY = CodeRegistry()
HOUR = 3_600_000


def branch(ctx: Any) -> int:
    n = ctx.step("bench.work", 1)["n"]
    ctx.sleep("1h")
    return int(n)


@workflow("bench-branches", build="bench", registry=REGISTRY)
def fan(ctx: Any, n: int) -> Any:
    return sum(ctx.parallel(*[branch] * n))


class Ids:
    def __init__(self) -> None:
        self.n = 0

    def token(self) -> str:
        self.n += 1
        return f"{self.n:032x}"


def run(n: int) -> tuple[float, int]:
    """Drive one execution to its end; return (seconds spent deciding, decisions)."""
    ids, state, spent, count = Ids(), ExecutionState("bench"), 0.0, 0

    def one(msg: Any, now: int) -> None:
        nonlocal spent, count
        t0 = time.perf_counter()
        d = decide(fan, state, msg, now, ids)
        spent += time.perf_counter() - t0
        count += 1
        for r in d.events:
            apply(state, r)

    one(StartMessage("bench", "start", workflow="bench-branches", input=n), 0)
    assert len(state.active) == n + 1, "every branch's step is in flight, and the group"
    steps = [k for k in state.active if k.endswith("bench.work")]
    for i, key in enumerate(steps, start=1):
        u = state.units[key]
        one(ResultMessage("bench", f"r-{key}", unit=key, token=u.token or "", output={"n": 1}), i)
    for i in range(1, n + 1):
        one(WakeMessage("bench", f"w-{i}"), HOUR + i)
    assert state.status == "COMPLETED" and state.output == n, (state.status, state.error)
    return spent, count


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10,1000")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    rt = code_runtime.default_runtime()
    sizes = [int(s) for s in args.sizes.split(",")]
    per: dict[int, float] = {}
    print(f"{'branches':>9} {'decisions':>10} {'total':>12} {'per branch':>12} {'per decision':>13}")
    for n in sizes:
        runs = []
        for _ in range(args.rounds):
            rt.forget()
            runs.append(run(n))
        spent, count = min(runs)
        per[n] = spent / n
        print(f"{n:>9,} {count:>10,} {spent * 1000:>9.1f} ms {per[n] * 1000:>9.3f} ms "
              f"{spent / count * 1000:>10.3f} ms")
    lo, hi = per[min(sizes)], per[max(sizes)]
    print(f"per-branch cost, {max(sizes):,} vs {min(sizes):,} branches: {hi / lo:.2f}x (target: within 2x)")


if __name__ == "__main__":
    main()
