"""Property tests of the core: folds, determinism, totality.

Histories come from the real engine: hypothesis draws a small definition
(a DAG of tasks, computes, sleeps, waits and `for` steps) and a script for
every worker, and the simulator runs it to the end.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from orbit.adapters.memory import SeededIds
from orbit.core.decider.decide import decide
from orbit.core.history.events import EVENT_TYPES, Recorded, event_from_dict, recorded_from_dict
from orbit.core.history.messages import message_from_dict
from orbit.core.history.model import apply, fold
from orbit.core.history.state import ExecutionState
from orbit.errors import ExecutionEnded, ValidationError
from orbit.testing.simulator import Behaviour, Simulator, answer_twice, crash, fail, hang, late, succeed

from tests.unit.dsl_harness import T0, definition

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

behaviours = st.sampled_from(
    [
        succeed({"v": 1}),
        succeed(2),
        fail("BUSY"),
        fail("HARD", retryable=False),
        hang(),
        crash(),
        answer_twice(3),
        late(5_000, 4),
    ]
)


@st.composite
def scenarios(draw: Any) -> tuple[dict[str, Any], dict[str, list[Behaviour]], list[int]]:
    n = draw(st.integers(1, 5))
    steps: dict[str, Any] = {}
    scripts: dict[str, list[Behaviour]] = {}
    for i in range(n):
        name = f"s{i}"
        kind = draw(st.sampled_from(["task", "task", "for", "compute", "sleep", "wait_for"]))
        body: dict[str, Any]
        if kind in ("task", "for"):
            task = f"t.{name}"
            body = {
                "task": task,
                "timeout": "10s",
                "input": {"i": i},
                "retry": {
                    "max_attempts": draw(st.integers(1, 3)),
                    "backoff": "1s",
                    "jitter": draw(st.sampled_from(["none", "full"])),
                },
            }
            if kind == "for":
                body.update(
                    {
                        "for": "{% input.items %}",
                        "concurrency": draw(st.integers(1, 3)),
                        "tolerated_failures": draw(st.integers(0, 2)),
                    }
                )
            if draw(st.booleans()):
                body["compensate"] = {"task": "t.undo", "timeout": "10s"}
            scripts[task] = draw(st.lists(behaviours, min_size=1, max_size=4))
        elif kind == "compute":
            body = {"compute": "{% $count(input.items) %}"}
        elif kind == "sleep":
            body = {"sleep": draw(st.sampled_from(["1s", "1h", "7d"]))}
        else:
            body = {"wait_for": "go", "timeout": "1h"}
        if i and draw(st.booleans()):
            body["after"] = [f"s{draw(st.integers(0, i - 1))}"]
        if draw(st.integers(0, 4)) == 0:
            body["when"] = "{% $count(input.items) > 1 %}"
        if draw(st.integers(0, 3)) == 0:
            body["on_failure"] = "continue"
        steps[name] = body
    scripts["t.undo"] = [draw(behaviours)]
    signals_at = draw(st.lists(st.integers(0, 3), max_size=2))
    return steps, scripts, signals_at


def run(scenario: Any, items: list[int]) -> Simulator:
    steps, scripts, signals_at = scenario
    sim = Simulator(start_ms=T0, snapshot_every=4)
    sim.register(definition(steps, timeout="30d", signals={"go": {}}))  # "go" may have no waiter
    for task, bs in scripts.items():
        sim.worker(task, *bs)
    sim.start("wf", {"items": items}, id="e1")
    for k in signals_at:
        for _ in range(k):
            sim.run_until_idle()
        with contextlib.suppress(ExecutionEnded):  # the run may end before this signal is sent
            sim.signal("e1", "go", {"k": k})
    sim.run()
    return sim


def records(sim: Simulator) -> list[Recorded]:
    return [recorded_from_dict(e) for e in sim.history("e1")]


def without_inbound(state: ExecutionState) -> dict[str, Any]:
    d = state.to_dict()
    d.pop("inbound_log")
    d.pop("signal_log")
    return d


@SETTINGS
@given(scenarios(), st.lists(st.integers(0, 9), max_size=4))
def test_runs_end_and_every_prefix_folds_like_the_whole(scenario: Any, items: list[int]) -> None:
    sim = run(scenario, items)
    recs = records(sim)
    whole = fold("e1", recs)
    assert whole.terminal, [r.event.type for r in recs][-5:]
    assert [r.seq for r in recs] == list(range(1, len(recs) + 1))
    for k in range(0, len(recs) + 1, max(1, len(recs) // 7)):
        part = fold("e1", recs[:k])
        assert ExecutionState.from_dict(part.to_dict()).to_dict() == part.to_dict()
        for r in recs[k:]:
            apply(part, r)
        assert part.to_dict() == whole.to_dict()
    assert without_inbound(sim.store.load("e1").fold()) == without_inbound(whole)  # snapshot + tail


@SETTINGS
@given(scenarios(), st.lists(st.integers(0, 9), max_size=3))
def test_the_same_scenario_gives_the_same_history(scenario: Any, items: list[int]) -> None:
    assert run(scenario, items).history("e1") == run(scenario, items).history("e1")


@SETTINGS
@given(scenarios(), st.data())
def test_decide_is_deterministic(scenario: Any, data: st.DataObject) -> None:
    sim = run(scenario, [1, 2])
    recs = records(sim)
    k = data.draw(st.integers(2, len(recs)))
    state = fold("e1", recs[:k])
    wf = sim.registry.get("wf")
    units = sorted(state.units) or ["s0"]
    msg = message_from_dict(
        data.draw(
            st.sampled_from(
                [
                    {"kind": "wake", "execution_id": "e1", "id": "w"},
                    {
                        "kind": "result",
                        "execution_id": "e1",
                        "id": "r",
                        "unit": units[0],
                        "token": state.units[units[0]].token
                        if units[0] in state.units and state.units[units[0]].token
                        else "x",
                        "output": 1,
                    },
                    {"kind": "signal", "execution_id": "e1", "id": "s", "name": "go", "payload": 1},
                    {"kind": "cancel", "execution_id": "e1", "id": "c", "reason": "r"},
                ]
            )
        )
    )
    now = recs[k - 1].timestamp_ms + data.draw(st.integers(0, 10**9))
    s1, s2 = copy.deepcopy(state), copy.deepcopy(state)
    d1 = decide(wf, s1, msg, now, SeededIds("x"))
    d2 = decide(wf, s2, msg, now, SeededIds("x"))
    assert [r.to_dict() for r in d1.events] == [r.to_dict() for r in d2.events]
    assert d1.effects == d2.effects and s1.to_dict() == s2.to_dict()
    replayed = copy.deepcopy(state)
    for r in d1.events:
        apply(replayed, r)
    assert replayed.to_dict() == s1.to_dict()  # decide's state is exactly the fold of its events


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=8,
)
field_names = st.sampled_from(
    [
        "step",
        "attempt",
        "token",
        "error",
        "items",
        "fire_at_ms",
        "deadline_ms",
        "name",
        "signal",
        "payload",
        "steps",
        "retry",
        "input",
        "output",
        "child_id",
        "reason",
        "next_attempt",
        "signal_id",
        "compensable",
        "fatal",
        "data",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(EVENT_TYPES) + ["Bogus"]),
            st.dictionaries(
                field_names, json_values | st.sampled_from(["s0", "s0[1]", "compensate:s0"]), max_size=6
            ),
        ),
        max_size=25,
    ),
    st.sampled_from(["wake", "cancel", "signal"]),
)
def test_apply_and_decide_are_total_on_arbitrary_events(raw: list[Any], kind: str) -> None:
    state = ExecutionState("e1")
    for seq, (typ, fields) in enumerate(raw, start=1):
        try:
            ev = event_from_dict({"type": typ, **fields})
        except ValidationError:
            continue
        apply(state, Recorded(seq, T0 + seq, ev))  # never raises
    state.to_dict()
    state.describe()
    sim = Simulator(start_ms=T0)
    wf = sim.register(
        definition(
            {"s0": {"task": "t.x", "retry": {"max_attempts": 2}}, "s1": {"wait_for": "go", "timeout": "1h"}}
        )
    )
    msg = message_from_dict({"kind": kind, "execution_id": "e1", "id": "m", "name": "go", "reason": "r"})
    decide(wf, state, msg, T0 + 10**9, SeededIds("x"))  # never raises on a garbled state either
