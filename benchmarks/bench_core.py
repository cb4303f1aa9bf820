"""Core benchmarks (a script that prints figures, not a timed test).

    python benchmarks/bench_core.py [--quick]

1. decisions per second for a 10-step workflow (pure `decide`, and through the Engine
   with the in-memory store: load from cache, commit, effects);
2. the cost of one decision at history lengths 10, 1,000 and 10,000 events: it must not
   grow with history (the state keeps aggregates; a decision touches what changed);
3. a 10,000-element `for` step end to end in the simulator, time per element against a
   100-element one (target: within 2x);
4. the snapshot of a long-running execution at a steady message rate (a 60-day task that
   heartbeats every 10 minutes): remembered inbound ids and snapshot size stay level (the
   state keeps the ids of its last `RECENT_COMMITS` commits, and signal ids for
   `INBOUND_WINDOW_MS`; they used to grow with every message of 19 days).
"""

from __future__ import annotations

import copy
import json
import statistics
import sys
import time
from typing import Any

from orbit.adapters.memory import SeededIds
from orbit.core.decider.decide import decide
from orbit.core.definition import parse_definition
from orbit.core.history.messages import ResultMessage, StartMessage
from orbit.core.history.state import INBOUND_WINDOW_MS, RECENT_COMMITS, ExecutionState
from orbit.testing.simulator import Simulator, succeed

T0 = 1_700_000_000_000


def ten_steps() -> Any:
    steps: dict[str, Any] = {"s0": {"task": "w.step", "input": {"n": "{% input.n %}"}}}
    for i in range(1, 10):
        steps[f"s{i}"] = {"task": "w.step", "input": {"prev": f"{{% steps.s{i - 1}.output %}}"}}
    return parse_definition({"orbit": 1, "name": "ten", "version": "1", "steps": steps})


def bench_decisions_per_second(runs: int) -> tuple[float, float]:
    wf = ten_steps()
    ids = SeededIds("bench")
    decisions = 0
    t = time.perf_counter()
    for r in range(runs):
        s = ExecutionState(f"e{r}")
        now = T0
        decide(wf, s, StartMessage(s.id, "start", "ten", "1", {"n": r}), now, ids)
        decisions += 1
        for i in range(10):
            u = s.units[f"s{i}"]
            now += 10
            decide(wf, s, ResultMessage(s.id, f"r{i}", f"s{i}", u.token or "", {"i": i}), now, ids)
            decisions += 1
        assert s.status == "COMPLETED"
    pure = decisions / (time.perf_counter() - t)

    sim = Simulator(start_ms=T0)
    sim.register(wf)
    sim.worker("w.step", succeed(1))
    t = time.perf_counter()
    for r in range(runs):
        sim.start("ten", {"n": r}, id=f"e{r}")
    sim.run()
    elapsed = time.perf_counter() - t
    handled = sum(len(sim.store.load(f"e{r}").fold().inbound) for r in range(runs))
    return pure, handled / elapsed


def history_of(length: int) -> tuple[Any, ExecutionState, ResultMessage]:
    """An execution whose history is about `length` events long, with one task in flight."""
    wf = parse_definition(
        {
            "orbit": 1,
            "name": "long",
            "version": "1",
            "steps": {
                "work": {
                    "for": "{% input.items %}",
                    "concurrency": 1,
                    "task": "w.item",
                    "input": "{% item %}",
                }
            },
        }
    )
    s = ExecutionState("long")
    ids = SeededIds("h")
    now = T0
    decide(wf, s, StartMessage(s.id, "start", "long", "1", {"items": list(range(length))}), now, ids)
    i = 0
    while s.last_seq < length - 2:  # every element adds StepScheduled + StepSucceeded
        u = s.units[f"work[{i}]"]
        now += 1
        decide(wf, s, ResultMessage(s.id, f"r{i}", f"work[{i}]", u.token or "", i), now, ids)
        i += 1
    u = s.units[f"work[{i}]"]
    return wf, s, ResultMessage(s.id, f"r{i}", f"work[{i}]", u.token or "", i)


def bench_decision_cost(lengths: list[int], reps: int) -> dict[int, tuple[int, float]]:
    out = {}
    for length in lengths:
        wf, state, msg = history_of(length)
        samples = []
        for _ in range(reps):
            s = copy.copy(state)  # shallow: the decision touches a handful of units
            s.units = dict(state.units)
            s.units[msg.unit] = copy.deepcopy(state.units[msg.unit])
            s.active, s.wakeups = dict(state.active), dict(state.wakeups)
            s.fanouts = copy.deepcopy(state.fanouts)
            t = time.perf_counter()
            d = decide(wf, s, msg, T0 + 10**7, SeededIds("c"))
            samples.append(time.perf_counter() - t)
            assert [r.event.type for r in d.events] == ["StepSucceeded", "StepScheduled"]
        out[length] = (state.last_seq, statistics.median(samples) * 1e6)
    return out


def bench_for(n: int) -> float:
    sim = Simulator(start_ms=T0)
    sim.register(
        {
            "orbit": 1,
            "name": "fan",
            "version": "1",
            "steps": {
                "ship": {
                    "for": "{% input.items %}",
                    "concurrency": 10,
                    "task": "s.ship",
                    "input": {"sku": "{% item %}"},
                }
            },
        }
    )
    sim.worker("s.ship", succeed({"ok": True}))
    t = time.perf_counter()
    eid = sim.start("fan", {"items": list(range(n))}, id=f"fan{n}")
    sim.run()
    elapsed = time.perf_counter() - t
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED" and len(d["output"]["ship"]) == n, d["status"]
    return elapsed / n


def bench_steady_snapshot(days: int, every_min: int) -> list[tuple[int, int, int, int]]:
    """(day, remembered ids, snapshot JSON bytes, zlib bytes) for a task heartbeating for `days`."""
    import zlib

    sim = Simulator(start_ms=T0, snapshot_every=25)
    sim.register(
        {"orbit": 1, "name": "long", "version": "1", "steps": {"work": {"task": "w.long", "timeout": "100d"}}}
    )
    from orbit.testing.simulator import hang

    sim.worker("w.long", hang())
    eid = sim.start("long", {}, id="long-1")
    sim.run_until_idle()
    token = sim.engine.load_state(eid).units["work"].token
    per_day = 24 * 60 // every_min
    out = []
    n = 0
    for day in range(1, days + 1):
        for _ in range(per_day):
            sim.clock.advance(every_min * 60_000)
            n += 1
            sim.engine.handle(
                {
                    "kind": "heartbeat",
                    "execution_id": eid,
                    "id": f"heartbeat:{token}:s:{n}",
                    "unit": "work",
                    "token": token,
                    "details": {"n": n},
                }
            )
        if day in (1, 7, 14, 21, 30, 45, 60) or day == days:
            state = sim.store.load(eid).fold()
            raw = json.dumps(state.to_dict(), separators=(",", ":")).encode()
            out.append((day, len(state.inbound), len(raw), len(zlib.compress(raw))))
    return out


def main() -> None:
    quick = "--quick" in sys.argv
    pure, engine = bench_decisions_per_second(20 if quick else 200)
    print(
        f"10-step workflow: {pure:,.0f} decisions/s (pure decide); {engine:,.0f} messages/s through the "
        f"Engine (memory store, commits, effects)"
    )
    lengths = [10, 1_000, 10_000]
    costs = bench_decision_cost(lengths, 50 if quick else 300)
    for length, (seq, us) in costs.items():
        print(f"one decision at history length {seq:>6,}: {us:8.1f} us (median)")
    ratio = costs[10_000][1] / costs[10][1]
    print(f"  cost at 10,000 / cost at 10 = {ratio:.2f}x")
    small = bench_for(100)
    big = bench_for(2_000 if quick else 10_000)
    print(
        f"for step end to end (simulator, concurrency 10): 100 elements {small * 1e6:.0f} us/element; "
        f"{2_000 if quick else 10_000:,} elements {big * 1e6:.0f} us/element; ratio {big / small:.2f}x "
        f"(target <= 2x)"
    )
    print(
        f"steady messages (a task heartbeating every 10 min for 60 days; the state keeps the ids of "
        f"its last {RECENT_COMMITS} commits, signal ids {INBOUND_WINDOW_MS / 86_400_000:.0f} days):"
    )
    for day, ids, raw, packed in bench_steady_snapshot(60, 10):
        print(
            f"  day {day:>2}: {ids:5,} inbound ids remembered, snapshot {raw / 1000:7.1f} KB JSON, "
            f"{packed / 1000:6.1f} KB zlib"
        )


if __name__ == "__main__":
    main()
