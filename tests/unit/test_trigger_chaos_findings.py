"""Defects the delivery-chaos simulator found in triggers (tests/chaos/chaos_triggers.py,
docs/decisions/trig3-triggers-under-chaos.md), each scripted: it fails on the code before the fix,
next to a control that passes on both.

- T1 (seeds 1, 2, 3, 6 of `--triggers all`): a throttled registry read while the triggers function
  looked for the sqs triggers of a user's queue dead-lettered good messages as "no active workflow
  has an sqs trigger", and the next records of the batch with them (the lookup was kept half-built).
- T2 (seed 3): a batch filled to `max_size` whose immediate flush failed (a throttled call after the
  write) took one more event before its check flushed it: a batch over `max_size`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from orbit.adapters.memory_trigger_buffers import MemoryTriggerBuffers
from orbit.aws.triggers import handle_records
from orbit.service import trigger_buffers
from orbit.service.triggers import deliver

from tests.unit.dsl_harness import sim_with
from tests.unit.test_trigger_buffers import Checks, _advance, _runs

JOBS = "arn:aws:sqs:us-east-1:123456789012:orbit-trigger-jobs"
TRIGGERS = {
    "jobs": {"sqs": {"queue_arn": JOBS}, "id": "{% 'j-' & body.id %}", "input": "{% body %}"},
    "clicks": {
        "eventbridge": {"pattern": {"source": ["web"]}},
        "id": "{% 'b-' & detail.page %}",
        "input": "{% detail.n %}",
        "batch": {"key": "{% detail.page %}", "max_size": 2, "max_wait": "1m"},
    },
}


class Dead:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, body: dict[str, Any]) -> None:
        self.sent.append(body)


def _sim() -> Any:
    sim = sim_with({"a": {"compute": "{% input %}"}}, triggers=TRIGGERS)
    sim.engine.trigger_dead_letters = Dead()
    sim.engine.trigger_buffers = MemoryTriggerBuffers()
    sim.engine.trigger_checks = checks = Checks()
    checks.clock = sim.engine.clock
    return sim


def _jobs(*ids: str) -> dict[str, Any]:
    return {"Records": [{"messageId": f"m-{i}", "eventSourceARN": JOBS, "body": json.dumps({"id": i})}
                        for i in ids]}


def _throttle_first_read(sim: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    real, calls = sim.engine.registry.get, []

    def get(name: str, version: Any = None) -> Any:
        calls.append(name)
        if len(calls) == 1:
            raise RuntimeError("ProvisionedThroughputExceededException (throttled)")
        return real(name, version)

    monkeypatch.setattr(sim.engine.registry, "get", get)


def test_control_a_users_queue_batch_starts_one_execution_per_message() -> None:
    sim = _sim()
    assert handle_records(sim.engine, _jobs("1", "2"), "arn:trigger-queue") == {"batchItemFailures": []}
    assert sorted(e.execution_id for e in sim.engine.list()[0]) == ["j-1", "j-2"]
    assert sim.engine.trigger_dead_letters.sent == []


def test_t1_a_throttled_registry_read_is_retried_not_dead_lettered(monkeypatch: pytest.MonkeyPatch) -> None:
    sim = _sim()
    _throttle_first_read(sim, monkeypatch)
    got = handle_records(sim.engine, _jobs("1", "2"), "arn:trigger-queue")
    assert sim.engine.trigger_dead_letters.sent == []  # before the fix: both as "no active workflow"
    assert got == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}  # SQS hands it over again
    assert [e.execution_id for e in sim.engine.list()[0]] == ["j-2"]  # the next record read again
    assert handle_records(sim.engine, _jobs("1"), "arn:trigger-queue") == {"batchItemFailures": []}
    assert sorted(e.execution_id for e in sim.engine.list()[0]) == ["j-1", "j-2"]


def _click(sim: Any, n: int) -> None:
    deliver(sim.engine, "wf", "clicks", {"detail": {"page": "p", "n": n}}, f"e{n}")


def test_control_a_batch_flushes_at_max_size() -> None:
    sim = _sim()
    for n in (1, 2, 3):
        _click(sim, n)
    _advance(sim, 61_000)
    assert _runs(sim) == {"b-p-1": [1, 2], "b-p-2": [3]}


def test_t2_a_full_batch_whose_flush_failed_flushes_before_it_takes_another_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sim = _sim()
    real, failed = trigger_buffers.check_due, []

    def check_due(engine: Any, body: dict[str, Any]) -> str:
        if not failed:  # the flush right after the write that filled the batch: throttled
            failed.append(body)
            raise RuntimeError("ThrottlingException (throttled)")
        return real(engine, body)

    monkeypatch.setattr(trigger_buffers, "check_due", check_due)
    _click(sim, 1)
    with pytest.raises(RuntimeError):
        _click(sim, 2)  # written (2 of 2), not flushed; the event is retried later
    _click(sim, 3)  # another event comes first
    _advance(sim, 61_000)
    runs = _runs(sim)
    assert all(len(batch) <= 2 for batch in runs.values()), runs  # before the fix: [1, 2, 3]
    assert runs == {"b-p-1": [1, 2], "b-p-2": [3]}
