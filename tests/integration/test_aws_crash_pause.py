"""The crash matrix for `orbit pause` / `unpause` (issue 31 §2): a code workflow is paused while
it waits for a signal, the signal is recorded while paused, then it is un-paused and finishes.
A crash before and after every write and send (the API's, the decider's, the worker's, the
timers') keeps the invariants of crash_matrix.py: nothing lost, nothing run twice."""

from __future__ import annotations

from typing import Any

from crash_code import NAME, SIGNAL, UNITS
from crash_matrix import RECORDER, reference_run, run_point
from crash_points import Call, crash_points
from crash_world import EXECUTION, Scenario, fresh_world

PAUSE = Scenario((), {"v": 3}, SIGNAL, code=(NAME, UNITS, "v1"), before_signal=("pause",),
                 after_signal=("unpause",))


def test_the_reference_run_is_paused_around_the_signal(clients: Any) -> None:
    with fresh_world(clients, RECORDER, PAUSE, None) as world:
        world.run()
        types = [e["type"] for e in world.container().engine.history(EXECUTION)]
    assert types.index("ExecutionPaused") < types.index("SignalReceived") < types.index("ExecutionUnpaused")
    assert types[-1] == "WorkflowCompleted"
    ref = reference_run(clients, PAUSE)
    assert ref.output == {"a": 6, "b": 12, "by": "ops"}
    assert Call("api", "sqs", "SendMessage", "DecisionQueue: pause") in ref.calls
    assert Call("api", "sqs", "SendMessage", "DecisionQueue: unpause") in ref.calls


def test_a_crash_before_and_after_every_write_and_send_keeps_the_invariants(clients: Any) -> None:
    ref = reference_run(clients, PAUSE)
    points = crash_points(ref.calls, writes_only=True)
    assert len(points) >= 20
    failed = [o for o in (run_point(clients, ref, p) for p in points) if not o.ok]
    assert not failed, f"{len(failed)} of {len(points)} crash points broke an invariant:\n" + \
        "\n".join(str(o) for o in failed)
