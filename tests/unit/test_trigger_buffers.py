"""Debounce and batching (service/trigger_buffers.py, docs/triggers.md) on the in-memory engine,
with the checks held by the test and fired when the clock reaches them: one execution per key
after the last event (bounded by max_wait), batches by size and by time in arrival order, no event
lost or counted twice, a flush interrupted between its writes finished by the next check."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.adapters.memory_trigger_buffers import MemoryTriggerBuffers
from orbit.core.definition import parse_definition
from orbit.errors import ValidationError
from orbit.service import trigger_buffers
from orbit.service.triggers import deliver

from tests.unit.dsl_harness import sim_with

TRIGGERS = {
    "typing": {
        "eventbridge": {"pattern": {"source": ["ui"]}},
        "id": "{% 'doc-' & detail.doc %}",
        "input": "{% detail %}",
        "debounce": {"key": "{% detail.doc %}", "period": "10s", "max_wait": "60s"},
    },
    "orders": {
        "sqs": {"queue_arn": "arn:aws:sqs:us-east-1:123456789012:orbit-trigger-o"},
        "id": "{% 'batch-' & body.shop %}",
        "input": "{% body.n %}",
        "batch": {"key": "{% body.shop %}", "max_size": 3, "max_wait": "30s"},
    },
}


class Checks:
    def __init__(self) -> None:
        self.pending: list[tuple[int, dict[str, Any]]] = []
        self.clock: Any = None

    def send(self, check: dict[str, Any], delay_ms: int) -> None:
        self.pending.append((self.clock.now_ms() + delay_ms, check))


def _sim() -> Any:
    sim = sim_with({"a": {"compute": "{% input %}"}}, triggers=TRIGGERS)
    sim.engine.trigger_buffers = MemoryTriggerBuffers()
    sim.engine.trigger_checks = checks = Checks()
    checks.clock = sim.engine.clock
    return sim


def _advance(sim: Any, ms: int) -> None:
    """Move the clock on, firing each check when its time comes (as SQS's delay would)."""
    checks = sim.engine.trigger_checks
    end = sim.engine.clock.now_ms() + ms
    while True:
        due = sorted((t, i) for i, (t, _) in enumerate(checks.pending) if t <= end)
        if not due:
            break
        t, i = due[0]
        _, check = checks.pending.pop(i)
        sim.clock.set(max(t, sim.engine.clock.now_ms()))
        trigger_buffers.check_due(sim.engine, check)
    if end > sim.engine.clock.now_ms():
        sim.advance(end - sim.engine.clock.now_ms())


def _runs(sim: Any) -> dict[str, Any]:
    sim.run_until_idle()
    return {e.execution_id: sim.describe(e.execution_id)["input"] for e in sim.engine.list()[0]}


def test_debounce_starts_one_execution_period_after_the_last_event_with_its_input() -> None:
    sim = _sim()
    for i in range(3):
        deliver(sim.engine, "wf", "typing", {"detail": {"doc": "d1", "v": i}}, f"e{i}")
        _advance(sim, 4_000)  # each event within the period of the one before
    assert _runs(sim) == {}
    _advance(sim, 6_000)  # 10 s after the last
    assert _runs(sim) == {"doc-d1-1": {"doc": "d1", "v": 2}}
    deliver(sim.engine, "wf", "typing", {"detail": {"doc": "d1", "v": 9}}, "e9")  # a new generation
    _advance(sim, 10_000)
    assert _runs(sim)["doc-d1-2"] == {"doc": "d1", "v": 9}


def test_max_wait_bounds_a_debounce_that_events_keep_extending() -> None:
    sim = _sim()
    for i in range(20):  # one event every 5 s for 100 s: the period never passes
        deliver(sim.engine, "wf", "typing", {"detail": {"doc": "d2", "v": i}}, f"k{i}")
        _advance(sim, 5_000)
    runs = _runs(sim)
    assert runs == {"doc-d2-1": {"doc": "d2", "v": 11}}  # flushed at 60 s: the last event before the bound
    _advance(sim, 10_000)  # the second generation began at 60 s; 10 s after its last event (95 s)
    assert _runs(sim)["doc-d2-2"] == {"doc": "d2", "v": 19}


def test_batches_by_size_and_by_time_keep_arrival_order_and_count_each_event_once() -> None:
    sim = _sim()
    for i, key in enumerate(["m1", "m2", "m2", "m3", "m4"]):  # m2 delivered twice
        deliver(sim.engine, "wf", "orders", {"body": {"shop": "s1", "n": i}}, key)
    assert _runs(sim) == {"batch-s1-1": [0, 1, 3]}  # full at 3: flushed at once, the duplicate not counted
    _advance(sim, 29_000)
    assert "batch-s1-2" not in _runs(sim)
    _advance(sim, 1_000)  # 30 s after its first event
    assert _runs(sim)["batch-s1-2"] == [4]
    deliver(sim.engine, "wf", "orders", {"body": {"shop": "s1", "n": 4}}, "m4")  # redelivered after its flush
    _advance(sim, 60_000)
    assert sorted(_runs(sim)) == ["batch-s1-1", "batch-s1-2"]


def test_a_flush_that_died_between_its_writes_is_finished_by_the_next_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sim = _sim()
    deliver(sim.engine, "wf", "orders", {"body": {"shop": "s2", "n": 1}}, "a")
    real = trigger_buffers._finish
    monkeypatch.setattr(trigger_buffers, "_finish", lambda *a: (_ for _ in ()).throw(SystemExit("crash")))
    with pytest.raises(SystemExit):
        _advance(sim, 30_000)  # the buffer moved on (closing kept), the process died before the start
    monkeypatch.setattr(trigger_buffers, "_finish", real)
    assert _runs(sim) == {}
    deliver(
        sim.engine, "wf", "orders", {"body": {"shop": "s2", "n": 2}}, "b"
    )  # the next event finishes it first
    assert _runs(sim) == {"batch-s2-1": [1]}
    _advance(sim, 30_000)
    assert _runs(sim)["batch-s2-2"] == [2]


def test_buffer_settings_are_checked_at_registration() -> None:
    base = {"orbit": 1, "name": "b", "version": "1", "steps": {"a": {"compute": "{% 1 %}"}}}
    bad = {
        "t": {
            "sqs": {"queue_arn": "arn:aws:sqs:us-east-1:123456789012:q"},
            "id": "{% body.id %}",
            "debounce": {"period": "0s"},
            "batch": {"max_size": 5000},
        }
    }
    with pytest.raises(ValidationError) as e:
        parse_definition({**base, "triggers": bad})
    paths = {p.path for p in e.value.problems}
    assert {
        "triggers.t.batch",
        "triggers.t.debounce.key",
        "triggers.t.debounce.period",
        "triggers.t.batch.max_size",
        "triggers.t.batch.max_wait",
    } <= paths
