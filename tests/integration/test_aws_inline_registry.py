"""Issue 25, item 1, on the deployed shape: the API function knows the names InlineTaskModules
register and refuses POST /definitions naming any other inline task; the decider never imports a
task by name (a definition stored without the check fails that step)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from orbit import worker


@worker.task("secapi.quote")
def quote(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    return {"price": 3 * input["n"]}


def definition(task: str, input: Any) -> dict[str, Any]:
    return {"orbit": 1, "name": "secapi", "version": "1",
            "steps": {"run": {"task": task, "inline": True, "input": input}},
            "output": "{% steps.run.output %}"}


@pytest.mark.parametrize("task", ["os:system", "os:getenv"])
def test_the_api_refuses_an_inline_task_its_inline_modules_do_not_register(
        cloud: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, task: str) -> None:
    monkeypatch.setenv("ORBIT_INLINE_MODULES", __name__)  # the deployer's InlineTaskModules
    marker = tmp_path / "owned"
    status, body = cloud.api("POST", "/definitions", definition(task, f"touch {marker}"))
    assert status == 400, body
    text = str(body)
    assert f"inline task {task!r} of step 'run' is not registered" in text
    # the served tasks are named, cut after a few: under xdist this process may hold many others
    assert "secapi.quote" in text or " more)" in text
    status, body = cloud.api("POST", "/executions", {"workflow": "secapi", "input": {}})
    assert status == 404, body  # nothing was registered
    cloud.run_until_idle()
    assert not marker.exists()


def test_the_api_accepts_a_registered_inline_task_and_the_decider_runs_it(
        cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORBIT_INLINE_MODULES", __name__)
    status, body = cloud.api("POST", "/definitions", definition("secapi.quote", {"n": 7}))
    assert status == 201, body
    status, body = cloud.api("POST", "/executions", {"workflow": "secapi", "input": {}, "id": "q-1"})
    assert status == 201, body
    cloud.run_until_idle()
    status, desc = cloud.api("GET", "/executions/q-1")
    assert desc["status"] == "COMPLETED" and desc["output"] == {"price": 21}, desc
