"""Scenarios: `heartbeat_timeout` on task steps (HEARTBEAT_TIMEOUT), its validation and defaults,
and the serialised forms that must stay byte-identical without it."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.core.definition import parse_definition
from orbit.core.history.effects import DispatchTask, effect_from_dict
from orbit.core.history.events import HEARTBEAT_TIMEOUT, RUNTIME_CODES, StepScheduled, event_from_dict
from orbit.core.history.state import UnitState
from orbit.errors import ValidationError
from orbit.testing.simulator import HANG, fail, hang, heartbeats, late, succeed

from tests.unit.dsl_harness import T0, definition, events, sim_with, unit_types

RETRY_ONCE = {"max_attempts": 2, "backoff": "1m"}


def attempt_errors(sim: Any, eid: str) -> list[tuple[str, int]]:
    return [(e["error"]["code"], e["timestamp_ms"] - T0) for e in events(sim, eid, "StepAttemptFailed")]


def test_a_started_task_without_heartbeats_times_out_then_the_retry_succeeds() -> None:
    sim = sim_with({"a": {"task": "t.a", "heartbeat_timeout": "10s", "timeout": "1h", "retry": RETRY_ONCE}})
    script = sim.worker("t.a", hang(), succeed("second"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert unit_types(sim, eid, "a") == [
        "StepScheduled", "StepDispatched", "StepAttemptFailed", "RetryScheduled",
        "StepScheduled", "StepDispatched", "StepSucceeded",
    ]
    assert attempt_errors(sim, eid) == [(HEARTBEAT_TIMEOUT, 10_000)]
    failed = events(sim, eid, "StepAttemptFailed")[0]["error"]
    assert failed["retryable"] is True and "no heartbeat within 10000 ms" in failed["message"]
    # The dispatch tells the worker; the attempt's own deadline is still the 1h timeout.
    assert [b["heartbeat_timeout_ms"] for b in script.seen] == [10_000, 10_000]
    assert events(sim, eid, "StepDispatched")[0]["deadline_ms"] == T0 + 3_600_000
    assert sim.describe(eid)["output"] == {"a": "second"}


def test_a_late_success_of_the_timed_out_attempt_resolves_the_unresolved_step() -> None:
    """Reconciliation (docs/definitions.md): the step had not ended when attempt 1's success came."""
    sim = sim_with({"a": {"task": "t.a", "heartbeat_timeout": "10s", "retry": RETRY_ONCE}})
    sim.worker("t.a", late(15_000, "first"), late(30_000, "second"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert attempt_errors(sim, eid) == [(HEARTBEAT_TIMEOUT, 10_000)]
    ok = events(sim, eid, "StepSucceeded")
    assert [(e["reconciled_attempt"], e["timestamp_ms"] - T0) for e in ok] == [(1, 15_000)]
    assert events(sim, eid, "StaleResultIgnored") == []  # during the 1 min backoff: no attempt 2
    assert sim.describe(eid)["output"] == {"a": "first"}


def test_heartbeats_every_interval_keep_a_long_task_alive() -> None:
    # 8 heartbeats 5s apart, the answer at 45s: far past the 10s heartbeat timeout, never 10s silent.
    sim = sim_with({"a": {"task": "t.a", "heartbeat_timeout": "10s"}})
    sim.worker("t.a", heartbeats(5_000, 8, "done"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert attempt_errors(sim, eid) == []
    assert len(events(sim, eid, "StepHeartbeat")) == 8
    done = events(sim, eid, "StepSucceeded")[0]
    assert done["timestamp_ms"] == T0 + 45_000 and sim.describe(eid)["status"] == "COMPLETED"


def test_the_clock_counts_from_the_last_heartbeat() -> None:
    sim = sim_with({"a": {"task": "t.a", "heartbeat_timeout": "10s"}})
    sim.worker("t.a", heartbeats(5_000, 2, HANG))  # beats at 5s and 10s, then silence
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert attempt_errors(sim, eid) == [(HEARTBEAT_TIMEOUT, 20_000)]
    assert sim.describe(eid)["error"]["code"] == HEARTBEAT_TIMEOUT


def test_the_attempt_timeout_wins_when_it_comes_first() -> None:
    sim = sim_with({"a": {"task": "t.a", "heartbeat_timeout": "10s", "timeout": "5s"}})
    sim.worker("t.a", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert attempt_errors(sim, eid) == [("TIMEOUT", 5_000)]


def test_heartbeats_do_not_extend_the_attempt_timeout() -> None:
    sim = sim_with({"a": {"task": "t.a", "heartbeat_timeout": "10s", "timeout": "22s"}})
    sim.worker("t.a", heartbeats(5_000, 8, "too late"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert attempt_errors(sim, eid) == [("TIMEOUT", 22_000)]
    assert "within 22000 ms" in sim.describe(eid)["error"]["message"]


def test_a_tie_is_reported_as_the_attempt_timeout() -> None:
    sim = sim_with({"a": {"task": "t.a", "heartbeat_timeout": "10s", "timeout": "10s"}})
    sim.worker("t.a", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert attempt_errors(sim, eid) == [("TIMEOUT", 10_000)]


def test_before_started_the_queue_timeout_applies() -> None:
    sim = sim_with({"a": {"task": "nobody.serves", "heartbeat_timeout": "10s", "queue_timeout": "1m"}})
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert attempt_errors(sim, eid) == [("QUEUE_TIMEOUT", 60_000)]


def test_a_heartbeat_that_arrives_after_its_deadline_does_not_revive_the_attempt() -> None:
    sim = sim_with({"a": {"task": "t.a", "heartbeat_timeout": "10s", "retry": RETRY_ONCE}})
    script = sim.worker("t.a", hang(), hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()  # dispatched and started at T0; the wake-up for T0+10s is armed
    token = script.seen[0]["token"]
    sim.clock.set(T0 + 12_000)  # the heartbeat is handled before the timer fires
    sim.engine.handle({"kind": "heartbeat", "execution_id": eid, "id": "hb-late", "unit": "a",
                       "token": token, "details": {"pct": 90}})
    assert unit_types(sim, eid, "a")[2:] == ["StepAttemptFailed", "RetryScheduled"]
    assert attempt_errors(sim, eid) == [(HEARTBEAT_TIMEOUT, 12_000)]
    assert events(sim, eid, "StepHeartbeat") == []


def test_a_heartbeat_in_time_is_recorded_and_moves_the_wake_up() -> None:
    sim = sim_with({"a": {"task": "t.a", "heartbeat_timeout": "10s"}})
    script = sim.worker("t.a", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    assert sim.store.load(eid).fold().wakeups["a"] == T0 + 10_000
    sim.clock.set(T0 + 7_000)
    sim.engine.handle({"kind": "heartbeat", "execution_id": eid, "id": "hb-1", "unit": "a",
                       "token": script.seen[0]["token"], "details": {"pct": 50}})
    state = sim.store.load(eid).fold()
    assert state.wakeups["a"] == T0 + 17_000 and state.units["a"].heartbeat == {"pct": 50}
    # The heartbeat armed nothing: the timer for T0+10s fires, finds nothing due, arms T0+17s.
    assert sim.timers.next_fire_ms() == T0 + 10_000
    sim.advance(3_000)
    assert sim.timers.next_fire_ms() == T0 + 17_000 and events(sim, eid, "StepAttemptFailed") == []
    sim.advance(7_000)
    assert attempt_errors(sim, eid) == [(HEARTBEAT_TIMEOUT, 17_000)]


# ---------------------------------------------------------------- definitions


@pytest.mark.parametrize(
    "step, path, message",
    [
        ({"http": {"method": "GET", "url": "https://x"}, "heartbeat_timeout": "5s"},
         "steps.s.heartbeat_timeout", "not used by a http step (only task)"),
        ({"wait_for": "go", "heartbeat_timeout": "5s"}, "steps.s.heartbeat_timeout",
         "not used by a wait_for step"),
        ({"workflow": "child", "heartbeat_timeout": "5s"}, "steps.s.heartbeat_timeout",
         "not used by a workflow step"),
        ({"compute": 1, "heartbeat_timeout": "5s"}, "steps.s.heartbeat_timeout",
         "not used by a compute step"),
        ({"task": "t", "heartbeat_timeout": 5}, "steps.s.heartbeat_timeout", "has no unit"),
        ({"task": "t", "heartbeat_timeout": "0s"}, "steps.s.heartbeat_timeout", "longer than 0"),
        ({"task": "t", "heartbaet_timeout": "5s"}, "steps.s.heartbaet_timeout",
         "did you mean 'heartbeat_timeout'?"),
        ({"task": "t",
          "compensate": {"http": {"method": "GET", "url": "https://x"}, "heartbeat_timeout": "5s"}},
         "steps.s.compensate.heartbeat_timeout", "not used by a http compensation (only task)"),
        ({"task": "t", "compensate": {"task": "u", "heartbeat_timeout": "soon"}},
         "steps.s.compensate.heartbeat_timeout", "not a duration"),
    ],
)
def test_heartbeat_timeout_is_refused_where_it_would_be_ignored(step: dict[str, Any], path: str,
                                                                message: str) -> None:
    doc = definition({"s": step}, signals={"go": {}})
    with pytest.raises(ValidationError) as info:
        parse_definition(doc)
    problems = [(p.path, p.message) for p in info.value.problems]
    assert any(p == path and message in m for p, m in problems), problems


def test_defaults_heartbeat_timeout_is_checked() -> None:
    with pytest.raises(ValidationError) as info:
        parse_definition(definition({"s": {"task": "t"}}, defaults={"heartbeat_timeout": "never"}))
    assert [p.path for p in info.value.problems] == ["defaults.heartbeat_timeout"]


def test_defaults_apply_to_task_steps_and_compensations_only() -> None:
    d = parse_definition(definition(
        {
            "t": {"task": "x", "compensate": {"task": "undo"}},
            "own": {"task": "x", "heartbeat_timeout": "2m"},
            "h": {"http": {"method": "GET", "url": "https://x"}},
            "w": {"wait_for": "go"},
        },
        defaults={"heartbeat_timeout": "30s"}, signals={"go": {}},
    ))
    assert d.steps["t"].heartbeat_timeout_ms == 30_000
    assert d.steps["t"].compensate is not None and d.steps["t"].compensate.heartbeat_timeout_ms == 30_000
    assert d.steps["own"].heartbeat_timeout_ms == 120_000
    assert d.steps["h"].heartbeat_timeout_ms is None and d.steps["w"].heartbeat_timeout_ms is None


def test_a_compensation_task_carries_its_own_heartbeat_timeout() -> None:
    sim = sim_with({
        "a": {"task": "t.a", "compensate": {"task": "t.undo", "heartbeat_timeout": "7s"}},
        "b": {"task": "t.b", "after": ["a"]},
    })
    sim.worker("t.a", succeed(1))
    sim.worker("t.b", fail("NO", retryable=False))
    undo = sim.worker("t.undo", succeed())
    sim.start("wf", {}, id="e1")
    sim.run()
    assert [b["heartbeat_timeout_ms"] for b in undo.seen] == [7_000]


# ---------------------------------------------------------------- serialised forms


def test_without_a_heartbeat_timeout_records_keep_their_old_form() -> None:
    e = StepScheduled(step="a", attempt=1, token="t")
    assert "heartbeat_timeout_ms" not in e.to_dict()
    d = DispatchTask("e", "a", "t.a", "t", None, 1, "tok", "e:a")
    assert "heartbeat_timeout_ms" not in d.to_dict()
    assert "heartbeat_timeout_ms" not in UnitState().to_dict()


def test_with_a_heartbeat_timeout_records_round_trip() -> None:
    e = StepScheduled(step="a", attempt=1, token="t", heartbeat_timeout_ms=5_000)
    assert e.to_dict()["heartbeat_timeout_ms"] == 5_000 and event_from_dict(e.to_dict()) == e
    d = DispatchTask("e", "a", "t.a", "t", None, 1, "tok", "e:a", heartbeat_timeout_ms=5_000)
    assert effect_from_dict(d.to_dict()) == d
    u = UnitState(heartbeat_timeout_ms=5_000)
    assert UnitState.from_dict(u.to_dict()) == u
    assert HEARTBEAT_TIMEOUT in RUNTIME_CODES
