"""Issue 25, item 1: an inline step runs a registered @task or its own workflow's ctx.run function,
never a function imported because a definition (caller data) or history named it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orbit
import pytest
from orbit.core.definition import parse_definition
from orbit.errors import ValidationError
from orbit.service.registration_checks import check_registration
from orbit.service.replay_host import default_runtime

from tests.unit.inline_world import World


def add(input: Any, ctx: Any) -> dict[str, Any]:
    return {"v": input["v"] + 1}


TASKS = {"t.add": add}


def hostile(task: str, command: str) -> dict[str, Any]:
    return {"orbit": 1, "name": "hostile", "steps": {
        "run": {"task": task, "inline": True, "input": command}}, "output": "{% steps.run.output %}"}


def cold_restart() -> None:
    """What a new decider process starts with: no ctx.run function remembered, no cached replay."""
    default_runtime().closures.clear()
    default_runtime().forget()


@pytest.mark.parametrize("task", ["os:system", "os:getenv", "subprocess:getoutput", "builtins:eval"])
def test_registration_refuses_an_inline_task_that_is_not_registered_naming_step_and_task(
        task: str, tmp_path: Path) -> None:
    marker = tmp_path / "owned"
    w = World(TASKS)
    definition = parse_definition(hostile(task, f"touch {marker}"))
    with pytest.raises(ValidationError) as e:
        check_registration(w.decider, definition)
    message = str(e.value)
    assert "\n" not in message and f"inline task {task!r} of step 'run'" in message, message
    assert message.startswith("steps.run.task: ") and "t.add" in message  # what this stack serves
    assert not marker.exists()


def test_a_stored_definition_whose_inline_task_is_not_served_fails_the_step_and_imports_nothing(
        tmp_path: Path) -> None:
    marker = tmp_path / "owned"
    w = World(TASKS)
    sys.modules.pop("this_module_must_not_be_imported", None)
    # stored before the rule (or its task left the deployment): registered without the check
    w.register(hostile("os:system", f"touch {marker}"))
    w.register({"orbit": 1, "name": "importer", "steps": {
        "run": {"task": "this_module_must_not_be_imported:f", "inline": True}}})
    eid = w.api.start("hostile", None, {}, "e1")
    other = w.api.start("importer", None, {}, "e2")
    w.settle()
    for x in (eid, other):
        desc = w.api.describe(x)
        assert desc["status"] == "FAILED" and desc["error"]["code"] == "INLINE_TASK_NOT_FOUND", desc
        assert "of step 'run' is not served by this decider" in desc["error"]["message"]
    assert not marker.exists()
    assert "this_module_must_not_be_imported" not in sys.modules


def test_a_registered_task_still_runs_inline_and_registration_accepts_it() -> None:
    w = World(TASKS)
    definition = parse_definition({"orbit": 1, "name": "ok", "steps": {
        "a": {"task": "t.add", "inline": True, "input": {"v": 1}}}, "output": "{% steps.a.output.v %}"})
    check_registration(w.decider, definition)
    w.registry.register(definition)
    eid = w.api.start("ok", None, {}, "e1")
    w.settle()
    assert w.api.describe(eid)["output"] == 2


def test_registration_checks_inline_steps_in_signal_handlers_too() -> None:
    w = World(TASKS)
    for raw in (
        {"orbit": 1, "name": "h", "signals": {"go": {}}, "steps": {"w": {"sleep": "1h"}},
         "on_signal": {"go": {"steps": {"x": {"task": "os:system", "inline": True}}}}},
    ):
        with pytest.raises(ValidationError, match="inline task 'os:system'"):
            check_registration(w.decider, parse_definition(raw))


@orbit.workflow("closure-after-restart", build="b1")
def closure_flow(ctx: Any, input: Any) -> Any:
    factor = input["factor"]  # only this execution's replay knows it: no name can find this lambda
    first = ctx.run(lambda x: x * factor, input["v"], name="scale")
    return {"first": first, "second": ctx.run(lambda: first + factor, name="again")}


def test_a_ctx_run_closure_survives_a_cold_restart_between_scheduling_and_result() -> None:
    w = World(TASKS)
    w.registry.register(closure_flow)
    # The API process starts it: its replay schedules the closure step and hands it over.
    eid = w.api.start("closure-after-restart", None, {"v": 5, "factor": 3}, "e1")
    assert [e["type"] for e in w.events(eid)][-1] == "StepScheduled"
    cold_restart()
    w.decider = w.container()  # a new decider process: it replays to find the closure
    w.settle()
    desc = w.api.describe(eid)
    assert desc["status"] == "COMPLETED", desc["error"]
    assert desc["output"] == {"first": 15, "second": 18}


def test_a_ctx_run_closure_survives_a_decider_crash_before_its_result_is_committed() -> None:
    w = World(TASKS)
    w.registry.register(closure_flow)
    eid = w.api.start("closure-after-restart", None, {"v": 2, "factor": 10}, "e1")  # commit 1
    w.store.crash_at = (2, "before")  # the decider runs the closure, then dies before the result's commit
    cold_restart()
    real_container = w.container

    def cold_container() -> Any:
        cold_restart()  # the replacement container is a new process too
        return real_container()

    w.container = cold_container  # type: ignore[method-assign]
    w.settle()
    desc = w.api.describe(eid)
    assert w.containers == 2 and desc["status"] == "COMPLETED", desc["error"]
    assert desc["output"] == {"first": 20, "second": 30}


def test_recall_replays_the_workflow_to_find_a_closure_the_process_no_longer_holds() -> None:
    from orbit.service.inline import dispatch_of, recall
    from orbit.worker.inline import InlineTasks

    w = World(TASKS)
    w.registry.register(closure_flow)
    eid = w.api.start("closure-after-restart", None, {"v": 4, "factor": 7}, "e1")
    cold_restart()  # e.g. evicted from the bounded table, or another process scheduled it
    state = w.api.load_state(eid)
    d = dispatch_of(state, "1.scale")
    tasks = InlineTasks(tasks=TASKS)
    _, error = tasks.run(d, 5_000, default_runtime().closures)
    assert error is not None and error.code == "INLINE_TASK_NOT_FOUND"  # its name is never imported
    recall(w.decider, eid, [d])
    assert default_runtime().closures.get(eid, "1.scale") is not None
    # this execution's factor, captured by the closure
    assert tasks.run(d, 5_000, default_runtime().closures) == (28, None)


@orbit.workflow("closure-at-most-once", build="b1")
def closure_once(ctx: Any, input: Any) -> Any:
    factor = input["factor"]
    return ctx.run(lambda x: x * factor, input["v"], name="scale", semantics="at_most_once",
                   retry={"max_attempts": 2, "backoff": "1s"})


def test_an_at_most_once_closure_whose_started_record_was_committed_retries_from_the_replay() -> None:
    w = World(TASKS)
    w.registry.register(closure_once)
    eid = w.api.start("closure-at-most-once", None, {"v": 6, "factor": 7}, "e1")  # commit 1: scheduled
    w.store.crash_at = (3, "before")  # commit 2: its started record; the decider dies before the result
    cold_restart()
    real_container = w.container

    def cold_container() -> Any:
        cold_restart()
        return real_container()

    w.container = cold_container  # type: ignore[method-assign]
    w.settle()
    desc = w.api.describe(eid)
    assert w.containers == 2 and desc["status"] == "COMPLETED", desc["error"]
    assert desc["output"] == 42
    types = [(e["type"], e.get("error", {}).get("code") if e.get("error") else None) for e in w.events(eid)
             if e.get("step") == "1.scale"]
    assert ("StepDispatched", None) in types and ("StepAttemptFailed", "ATTEMPT_UNCERTAIN") in types, types
