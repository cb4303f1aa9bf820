"""Cost of one decision of a code workflow at 10, 1,000 and 10,000 recorded durable calls.

    python benchmarks/bench_code.py [--sizes 10,1000,10000] [--decisions 20]

Cold: the function replays from its first call (no cached instance), so a
decision costs O(recorded calls). Warm: the decider keeps the paused instance
(`orbit/core/runtime/code/replayer.py`) and feeds it only the new result, so a decision
costs the same at any history length. Reloaded: warm too, but each decision gets
a state object loaded again (a copy, made outside the timing), as after a lost commit
or another decider's commit; the cached instance is then checked against every fact
it consumed (`code/witness.py`), O(recorded calls) lookups, no replay. One decision
here is the real pure decision (`orbit.core.decider.decide.decide`): a step result arrives, the engine applies
it, the runtime asks for the next step, the engine schedules it.
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import time
from typing import Any

from orbit.core.decider.decide import decide
from orbit.core.history.events import Recorded, StepScheduled, StepSucceeded, WorkflowCreated, WorkflowStarted
from orbit.core.history.messages import ResultMessage
from orbit.core.history.model import fold
from orbit.core.history.state import ExecutionState

try:
    from orbit.service import replay_host as code_runtime
except ImportError:  # a checkout from before issue 27 section 5 (--old): the runtime was under core/
    from orbit.core.runtime import code as code_runtime  # type: ignore[no-redef]
from orbit.workflow import CodeRegistry, workflow

REGISTRY = CodeRegistry()


@workflow("bench-loop", build="bench", registry=REGISTRY)
def loop(ctx: Any, input: Any) -> Any:
    total = 0
    for i in range(10**9):  # one durable call per result, forever
        total += ctx.step("bench.work", i)["n"]
    return total


class Ids:
    def __init__(self) -> None:
        self.n = 0

    def token(self) -> str:
        self.n += 1
        return f"{self.n:032x}"


def history(calls: int) -> ExecutionState:
    """A state with `calls` succeeded steps and step calls+1 scheduled (waiting for its result)."""
    records = [Recorded(1, 0, WorkflowCreated("bench-loop", "1", "bench", None, build="bench",
                                              execution_id="bench")),
               Recorded(2, 0, WorkflowStarted())]
    seq = 2
    for i in range(1, calls + 2):
        key = f"{i}.bench.work"
        seq += 1
        records.append(Recorded(seq, i, StepScheduled(key, 1, i - 1, token=f"t{i}", kind="task",
                                                      task="bench.work", queue="bench")))
        if i <= calls:
            seq += 1
            records.append(Recorded(seq, i, StepSucceeded(key, 1, {"n": 1})))
    return fold("bench", records)


def decisions(state: ExecutionState, count: int, reload: bool = False) -> list[float]:
    """Time `count` consecutive decisions (each: the pending step's result arrives); `reload`: each
    on a copy of the state (a state loaded again), made before the clock starts."""
    ids, out, kept = Ids(), [], []
    assert len(state.active) == 1  # exactly one step is in flight
    for _ in range(count):
        if reload:
            kept.append(state)  # freeing the previous copy is not the decision's work either
            state = copy.deepcopy(state)
            gc.collect()  # nor is the copy's garbage
        key = next(iter(state.active))
        token = state.units[key].token or ""
        msg = ResultMessage("bench", f"r-{key}", unit=key, token=token, output={"n": 1})
        t0 = time.perf_counter()
        d = decide(loop, state, msg, 10**6, ids, code_runtime=code_runtime.default_runtime())
        out.append(time.perf_counter() - t0)
        assert [r.event.type for r in d.events] == ["StepSucceeded", "StepScheduled"], d.events
    return out


def measure(calls: int, count: int) -> tuple[float, float, float, int, float]:
    rt = code_runtime.default_runtime()
    rt.forget()
    rt.cache_size = 0
    state = history(calls)
    cold = statistics.median(decisions(state, max(3, count // 4 if calls >= 10_000 else count)))
    rt.cache_size = code_runtime.DEFAULT_CACHE_SIZE
    state = history(calls)
    decisions(state, 1)  # the first decision on this process replays once and leaves the instance warm
    stats = dict(rt.stats)
    warm = statistics.median(decisions(state, count))
    reloaded = statistics.median(decisions(state, count, reload=True))
    replayed = rt.stats["cold"] - stats["cold"]  # decisions that did not stay warm
    check = full_check(rt)
    rt.forget()
    return cold, warm, reloaded, replayed, check


def full_check(rt: Any, times: int = 20) -> float:
    """The check alone: what the cached instance relied on, against a copy of its last state."""
    replay = rt._cache["bench"].replay
    seen, other = replay.seen, copy.deepcopy(replay.state)
    out = []
    for _ in range(times):
        t0 = time.perf_counter()
        assert seen.held_by(other)
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10,1000,10000")
    p.add_argument("--decisions", type=int, default=20)
    args = p.parse_args()
    print(f"{'recorded calls':>15} {'cold (full replay)':>20} {'warm (cached)':>15} {'cold/warm':>10} "
          f"{'warm, reloaded state':>21} {'cold replays':>13} {'full check alone':>17}")
    for n in (int(s) for s in args.sizes.split(",")):
        cold, warm, reloaded, replayed, check = measure(n, args.decisions)
        print(f"{n:>15,} {cold * 1000:>17.3f} ms {warm * 1000:>12.3f} ms {cold / warm:>9.1f}x "
              f"{reloaded * 1000:>18.3f} ms {replayed:>13} {check * 1000:>14.3f} ms")


if __name__ == "__main__":
    main()
