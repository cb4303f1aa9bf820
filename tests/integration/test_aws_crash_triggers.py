"""The crash matrix for a trigger's start (docs/triggers.md): the realistic scenario's execution is
started by the triggers function from an EventBridge event its rule put on the trigger queue, and
the same event arrives twice (EventBridge delivers at least once). A crash before and after every
write and send (the triggers function's included) keeps the invariants of crash_matrix.py: one
execution, nothing lost, nothing run twice."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from crash_matrix import RECORDER, reference_run, run_point
from crash_points import crash_points
from crash_world import EXECUTION, PARENT, REALISTIC, fresh_world

TRIGGERED = {**PARENT, "triggers": {"placed": {
    "eventbridge": {"pattern": {"source": ["shop"], "detail-type": ["OrderPlaced"]}},
    "id": "{% detail.order %}", "input": "{% {'n': detail.n} %}"}}}
EVENT = {"orbit_trigger": {"workflow": PARENT["name"], "trigger": "placed"},
         "event": {"id": "ev-1", "source": "shop", "detail-type": "OrderPlaced",
                   "detail": {"order": EXECUTION, "n": 20}}}
BY_TRIGGER = replace(REALISTIC, definitions=(REALISTIC.definitions[0], TRIGGERED),
                     trigger_events=(EVENT, EVENT))  # the same event twice: at-least-once delivery


def test_the_reference_run_is_started_once_by_the_trigger(clients: Any) -> None:
    with fresh_world(clients, RECORDER, BY_TRIGGER, None) as world:
        world.run()
        engine = world.container().engine
        assert [e.execution_id for e in engine.list(PARENT["name"])[0]] == [EXECUTION]
        assert engine.describe(EXECUTION)["input"] == {"n": 20}
        assert engine.describe(EXECUTION)["status"] == "COMPLETED"
    ref = reference_run(clients, BY_TRIGGER)
    assert any(c.handler == "triggers" and c.writes for c in ref.calls)


def test_a_crash_before_and_after_every_write_and_send_keeps_the_invariants(clients: Any) -> None:
    ref = reference_run(clients, BY_TRIGGER)
    points = crash_points(ref.calls, writes_only=True)
    assert len(points) >= 20
    failed = [o for o in (run_point(clients, ref, p) for p in points) if not o.ok]
    assert not failed, f"{len(failed)} of {len(points)} crash points broke an invariant:\n" + \
        "\n".join(str(o) for o in failed)
