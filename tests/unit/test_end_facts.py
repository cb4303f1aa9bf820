"""What the end of an execution may skip, derived from its history alone (pure), and the engine
acting on it: the start records the provisional expiry every item is written with
(WorkflowCreated.provisional_expiry_s) and the fold keeps `timer_free` (no state after any event
had a wake-up, so no timer was ever armed)."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.core.decider.decide import decide
from orbit.core.definition import parse_definition
from orbit.core.definition.retention import provisional_expiry_s
from orbit.core.history.events import (
    CancelRequested,
    Recorded,
    StepScheduled,
    StepSucceeded,
    WorkflowCreated,
    WorkflowStarted,
)
from orbit.core.history.messages import StartMessage
from orbit.core.history.model import fold
from orbit.core.history.state import ExecutionState
from orbit.testing.simulator import Simulator, fail, succeed
from orbit.workflow import CodeRegistry, workflow

from tests.unit.dsl_harness import T0, definition

R = 2 * 24 * 3600 * 1000
P = provisional_expiry_s(T0, R)


class Ids:
    def __init__(self) -> None:
        self.n = 0

    def token(self) -> str:
        self.n += 1
        return f"t{self.n:032d}"


def created(expiry: Any = P) -> WorkflowCreated:
    return WorkflowCreated("wf", "1", "sha256:x", provisional_expiry_s=expiry)


def history(*events: Any) -> ExecutionState:
    return fold("e", [Recorded(i + 1, T0 + i, e) for i, e in enumerate(events)])


# ------------------------------------------------------------------ the decider records it
def test_a_start_records_the_provisional_expiry_of_its_workflows_retention() -> None:
    wf = parse_definition(definition({"a": {"task": "t"}}))
    own = parse_definition(definition({"a": {"task": "t"}}, retention="3d"))
    for w, retention in ((wf, R), (own, 3 * 24 * 3600 * 1000)):  # the workflow's own wins
        state = ExecutionState("e")
        d = decide(w, state, StartMessage("e", "start:e", "wf"), T0, Ids(), R)
        first = d.events[0].event
        assert isinstance(first, WorkflowCreated)
        assert first.provisional_expiry_s == provisional_expiry_s(T0, retention)
        assert state.provisional_expiry_s == first.provisional_expiry_s
    unknown = decide(wf, ExecutionState("e"), StartMessage("e", "start:e", "wf"), T0, Ids())
    assert unknown.events[0].event.provisional_expiry_s is None  # no retention given: nothing claimed


def test_a_start_after_a_tombstone_records_no_expiry() -> None:
    """A parent's cancel that overtook the start was committed first, without an expiry."""
    wf = parse_definition(definition({"a": {"task": "t"}}))
    state = history(CancelRequested("parent cancelled"))
    d = decide(wf, state, StartMessage("e", "start:e", "wf"), T0 + 5, Ids(), R)
    assert d.events[0].event.provisional_expiry_s is None and state.provisional_expiry_s is None


# ------------------------------------------------------------------ the fold
def test_the_fold_trusts_only_a_start_recorded_first_with_the_field() -> None:
    s = history(created(), WorkflowStarted())
    assert (s.provisional_expiry_s, s.timer_free) == (P, True)
    old = history(created(None), WorkflowStarted())  # recorded before starts kept it
    assert (old.provisional_expiry_s, old.timer_free) == (None, False)
    late = history(CancelRequested("x"), created())  # after a tombstone (as a hand-written history)
    assert (late.provisional_expiry_s, late.timer_free) == (None, False)
    odd = history(created(True))  # hostile: not an epoch second
    assert (odd.provisional_expiry_s, odd.timer_free) == (None, False)


def test_one_wake_up_in_any_state_clears_timer_free_for_good() -> None:
    scheduled = StepScheduled("a", 1, "t", "q", None, "tok", "key", deadline_ms=T0 + 60_000)
    s = history(created(), WorkflowStarted(), scheduled)
    assert not s.timer_free and s.wakeups
    s = history(created(), WorkflowStarted(), scheduled, StepSucceeded("a", 1, 1))
    assert not s.wakeups and not s.timer_free  # the timer armed for the deadline may still be set
    assert not history(created(), WorkflowStarted(T0 + 3_600_000)).timer_free  # a workflow timeout
    plain = StepScheduled("a", 1, "t", "q", None, "tok", "key")
    assert history(created(), WorkflowStarted(), plain, StepSucceeded("a", 1, 1)).timer_free


def test_snapshots_keep_both_facts_and_older_snapshots_read_as_unknown() -> None:
    s = history(created(), WorkflowStarted())
    d = s.to_dict()
    again = ExecutionState.from_dict(d)
    assert (again.provisional_expiry_s, again.timer_free) == (P, True)
    older = {k: v for k, v in d.items() if k not in ("provisional_expiry_s", "timer_free")}
    before = ExecutionState.from_dict(older)
    assert (before.provisional_expiry_s, before.timer_free) == (None, False)
    assert "timer_free" not in history(created(None)).to_dict()  # left out while unset


# ------------------------------------------------------------------ every arm shows in the fold
REG = CodeRegistry()


@workflow("sleeper", registry=REG)
def sleeper(ctx: Any, input: Any) -> Any:
    ctx.sleep("2h")
    return 1


SCENARIOS: dict[str, tuple[dict[str, Any] | Any, dict[str, list[Any]]]] = {
    "plain": (definition({"a": {"task": "t"}, "b": {"task": "t", "after": ["a"]}}), {}),
    "retry": (definition({"a": {"task": "t", "retry": {"max_attempts": 2, "backoff": "20m"}}}),
              {"t": [fail("BOOM"), succeed(1)]}),
    "timeout": (definition({"a": {"task": "t", "timeout": "30m"}}), {}),
    "heartbeat": (definition({"a": {"task": "t", "heartbeat_timeout": "5m"}}), {}),
    "sleep": (definition({"a": {"sleep": "1h"}}), {}),
    "wait": (definition({"a": {"wait_for": "go", "timeout": "1h"}}), {}),
    "workflow-timeout": (definition({"a": {"task": "t"}}, timeout="1d"), {}),
    "code-sleep": (sleeper, {}),
    # an inline attempt's lease is a wake-up, armed only on a redelivery: never timer_free (the
    # history cannot tell whether a redelivery armed it)
    "inline": (definition({"a": {"task": "t", "inline": True}}), {}),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_an_execution_that_armed_any_timer_is_never_timer_free(name: str) -> None:
    """Every way a decision arms a timer (the decider's ArmTimer, inline batches, a redelivery's
    lease timer) arms one for a wake-up of a state the history holds: whatever armed here, the
    folded state says it may have been. One that armed nothing, and only that, is timer_free."""
    wf, scripts = SCENARIOS[name]
    sim = Simulator(start_ms=T0)
    sim.register(wf)
    for task, behaviours in {"t": [succeed(1)], **scripts}.items():
        sim.worker(task, *behaviours)
    armed: list[str] = []
    arm = sim.engine.timers.arm
    sim.engine.timers.arm = lambda eid, at, seq=None: (armed.append(eid), arm(eid, at, seq))[1]  # type: ignore[method-assign]
    eid = sim.start(getattr(wf, "name", None) or wf["name"], {}, id="e")
    sim.run()
    state = sim.engine.load_state(eid)
    assert state.terminal, sim.engine.describe(eid)
    folded = fold(eid, [r for c in sim.engine.store.scan_commits(eid, newest_first=False) for r in c.events])
    assert folded.timer_free == state.timer_free  # the cached state and the fold agree
    if armed:
        assert not state.timer_free, armed
    assert armed or name in ("plain", "inline"), "the scenario no longer arms a timer"
    if name == "plain":
        assert state.timer_free and not armed


# ------------------------------------------------------------------ the engine acts on it
def test_the_engine_disarms_and_walks_only_when_the_history_cannot_say(monkeypatch: Any) -> None:
    sim = Simulator(start_ms=T0)
    sim.register(definition({"a": {"task": "t"}}, retention="2d"))
    sim.register(definition({"a": {"task": "t", "timeout": "30m"}}, name="timed", retention="2d"))
    sim.worker("t", succeed(1))
    disarmed: list[str] = []
    retired: dict[str, bool] = {}
    disarm, retire = sim.engine.timers.disarm, sim.engine.store.retire
    sim.engine.timers.disarm = lambda eid, at=None: (disarmed.append(eid) if at is None else None,
                                                     disarm(eid, at))[1]  # type: ignore[method-assign]
    sim.engine.store.retire = lambda eid, *a: (retired.__setitem__(eid, a[-1]), retire(eid, *a))[1]  # type: ignore
    sim.start("wf", {}, id="new")
    sim.start("timed", {}, id="timed")
    real = decide
    monkeypatch.setattr("orbit.service.deciding.decide",
                        lambda wf, state, m, now, ids, retention_ms=None, code_runtime=None:
                        real(wf, state, m, now, ids, None, code_runtime))
    sim.start("wf", {}, id="old")  # as an engine before this change started it
    sim.run()
    assert retired == {"new": True, "timed": True, "old": False}  # only the old start is walked
    assert sorted(disarmed) == ["old", "timed"]
    created = sim.engine.load_state("new").created_at_ms
    assert sim.engine.store.expiry["new"] == provisional_expiry_s(created, R)
