"""The crash matrix for signal-with-start (docs/triggers.md): the realistic scenario's execution is
created by `POST /executions/{id}/signal-with-start` carrying its approval signal (one commit), and
a crash before and after every write and send (the API's included: a crashed call is retried with
the same signal id) keeps the invariants of crash_matrix.py: nothing lost, nothing run twice."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from crash_matrix import RECORDER, reference_run, run_point
from crash_points import crash_points
from crash_world import EXECUTION, REALISTIC, fresh_world

WITH_START = replace(REALISTIC, with_start=True)


def test_the_reference_run_receives_the_signal_in_the_start_commit(clients: Any) -> None:
    with fresh_world(clients, RECORDER, WITH_START, None) as world:
        world.run()
        engine = world.container().engine
        first = engine.store.read_commit(EXECUTION, 1)
        assert "SignalReceived" in [type(r.event).__name__ for r in first.events]
        received = [e for e in engine.history(EXECUTION) if e["type"] == "SignalReceived"]
        assert len(received) == 1 and engine.describe(EXECUTION)["status"] == "COMPLETED"
    ref = reference_run(clients, WITH_START)
    assert ref.output["by"] == "ops"
    assert any(c.handler == "api" and c.writes for c in ref.calls)  # the API's commit is a crash point too


def test_a_crash_before_and_after_every_write_and_send_keeps_the_invariants(clients: Any) -> None:
    ref = reference_run(clients, WITH_START)
    points = crash_points(ref.calls, writes_only=True)
    assert len(points) >= 20
    failed = [o for o in (run_point(clients, ref, p) for p in points) if not o.ok]
    assert not failed, f"{len(failed)} of {len(points)} crash points broke an invariant:\n" + \
        "\n".join(str(o) for o in failed)
