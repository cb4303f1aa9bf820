"""The crash matrix for a batched trigger (docs/triggers.md, "Debounce and batching"): two events
(the first delivered twice) fill a batch of two, whose flush starts the realistic scenario's
execution from the triggers function: the buffer's conditional writes, the check it arms, the
flush's move to the next generation, the start and the clearing of the flushed batch are all
crash points. The invariants of crash_matrix.py hold at each: one execution, started once with
both events in arrival order, nothing lost, nothing run twice."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from crash_matrix import RECORDER, reference_run, run_point
from crash_points import crash_points
from crash_world import EXECUTION, PARENT, REALISTIC, fresh_world

BATCHED = {**PARENT, "triggers": {"clicks": {
    "eventbridge": {"pattern": {"source": ["web"]}},
    "id": "{% 'crash' %}", "input": "{% detail %}",
    "batch": {"max_size": 2, "max_wait": "10m"}}}}


def _event(eid: str, detail: dict[str, Any]) -> dict[str, Any]:
    return {"orbit_trigger": {"workflow": PARENT["name"], "trigger": "clicks"},
            "event": {"id": eid, "source": "web", "detail-type": "Click", "detail": detail}}


FIRST, SECOND = _event("ev-1", {"n": 20}), _event("ev-2", {"page": "home"})
BY_BATCH = replace(REALISTIC, definitions=(REALISTIC.definitions[0], BATCHED),
                   trigger_events=(FIRST, FIRST, SECOND))  # the first event twice: at-least-once


def test_the_reference_run_starts_one_execution_with_the_batch(clients: Any) -> None:
    with fresh_world(clients, RECORDER, BY_BATCH, None) as world:
        world.run()
        engine = world.container().engine
        assert EXECUTION == "crash-1"
        assert [e.execution_id for e in engine.list(PARENT["name"])[0]] == [EXECUTION]
        assert engine.describe(EXECUTION)["input"] == [{"n": 20}, {"page": "home"}]
        assert engine.describe(EXECUTION)["status"] == "COMPLETED"
    ref = reference_run(clients, BY_BATCH)
    assert any(c.handler == "triggers" and c.writes for c in ref.calls)


def test_a_crash_before_and_after_every_write_and_send_keeps_the_invariants(clients: Any) -> None:
    ref = reference_run(clients, BY_BATCH)
    points = crash_points(ref.calls, writes_only=True)
    assert len(points) >= 20
    failed = [o for o in (run_point(clients, ref, p) for p in points) if not o.ok]
    assert not failed, f"{len(failed)} of {len(points)} crash points broke an invariant:\n" + \
        "\n".join(str(o) for o in failed)
