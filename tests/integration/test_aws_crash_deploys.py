"""The crash matrix for safe deploys: a crash before and after every write and send of a run whose
build is switched by a deploy, and of a run parked by an incompatible deploy, then un-parked by
compatible code and `orbit unpark` (crash_code.py). Nothing is lost, nothing runs twice."""

from __future__ import annotations

from typing import Any

import pytest
from crash_code import SWITCH, UNPARK
from crash_matrix import RECORDER, check, reference_run, run_point
from crash_points import Call, crash_points
from crash_world import EXECUTION, Scenario, fresh_world


def _events(clients: Any, scenario: Any) -> list[str]:
    with fresh_world(clients, RECORDER, scenario, None) as world:
        world.run()
        return [e["type"] for e in world.container().engine.history(EXECUTION)]


def test_the_reference_runs_switch_the_build_and_unpark(clients: Any) -> None:
    switched = _events(clients, SWITCH)
    assert "BuildSwitched" in switched and "ExecutionParked" not in switched
    unparked = _events(clients, UNPARK)
    assert unparked.index("ExecutionParked") < unparked.index("ExecutionUnparked")
    ref = reference_run(clients, UNPARK)
    assert ref.output == {"a": 6, "b": 12, "by": "ops"}
    assert Call("api", "sqs", "SendMessage", "DecisionQueue: unpark") in ref.calls


@pytest.mark.parametrize("scenario", [SWITCH, UNPARK], ids=["switch", "unpark"])
def test_a_crash_before_and_after_every_write_and_send_keeps_the_invariants(clients: Any,
                                                                             scenario: Any) -> None:
    ref = reference_run(clients, scenario)
    points = crash_points(ref.calls, writes_only=True)
    assert len(points) >= 20
    failed = [o for o in (run_point(clients, ref, p) for p in points) if not o.ok]
    assert not failed, f"{len(failed)} of {len(points)} crash points broke an invariant:\n" + \
        "\n".join(str(o) for o in failed)


def test_without_unpark_the_retry_timer_unparks_it_through_the_timers_function(clients: Any) -> None:
    by_timer = Scenario(UNPARK.definitions, UNPARK.input, UNPARK.signal, UNPARK.code, UNPARK.before_signal,
                        ("deploy:v1",))
    with fresh_world(clients, RECORDER, by_timer, None) as world:
        world.run()
        problems, _ = check(world, {"a": 6, "b": 12, "by": "ops"})
        types = [e["type"] for e in world.container().engine.history(EXECUTION)]
        calls = list(RECORDER.calls)
    assert problems == []
    assert types.index("ExecutionParked") < types.index("ExecutionUnparked")
    assert Call("api", "sqs", "SendMessage", "DecisionQueue: unpark") not in calls
    assert Call("timers", "sqs", "SendMessage", "DecisionQueue: wake") in calls
