"""Retiring a definition (issue 26): new starts of the retired version are refused with one clear
line, running executions finish, registering the version again brings it back."""

from __future__ import annotations

import pytest
from orbit.errors import UnknownWorkflow, WorkflowRetired
from orbit.service.http import handle_request

from tests.unit.dsl_harness import definition, sim_with

GATE = {"w": {"wait_for": "go"}}


def test_a_retired_version_refuses_starts_and_its_running_execution_finishes() -> None:
    sim = sim_with(GATE)
    sim.start("wf", {}, id="running")
    sim.run_until_idle()
    status, body = handle_request(sim.engine, "POST", "/definitions/wf/retire", {"version": "1"})
    assert (status, body) == (200, {"name": "wf", "retired": ["1"]})
    status, body = handle_request(sim.engine, "POST", "/executions", {"workflow": "wf", "id": "new"})
    assert status == 409 and body["error"]["code"] == "WORKFLOW_RETIRED"
    assert body["error"]["message"] == (
        "workflow 'wf': its latest version, 1, is retired: new starts are refused (running executions "
        "finish); register it again to bring it back, or start another version")
    assert sim.engine.start("wf", None, {}, "running") == "running"  # a repeated start finds its execution
    with pytest.raises(WorkflowRetired):
        sim.engine.start("wf", None, {"other": 1}, "running")  # ...not another input
    sim.signal("running", "go", 1)
    sim.run()
    assert sim.describe("running")["status"] == "COMPLETED"
    status, body = handle_request(sim.engine, "GET", "/workflows")
    assert body["workflows"][0]["versions"][0]["retired"] is True


def test_retiring_one_version_leaves_the_others_and_registering_again_brings_it_back() -> None:
    sim = sim_with(GATE)
    sim.register(definition(GATE, version="2"))
    assert handle_request(sim.engine, "POST", "/definitions/wf/retire", {"version": "1"})[0] == 200
    with pytest.raises(WorkflowRetired, match="version 1 is retired"):
        sim.engine.start("wf", "1", {}, "old")
    assert sim.engine.start("wf", None, {}, "latest") == "latest"  # the latest, 2, still starts
    sim.register(definition(GATE))  # version 1 again
    assert sim.engine.start("wf", "1", {}, "back") == "back"


def test_retiring_every_version_and_unknown_names() -> None:
    sim = sim_with(GATE)
    sim.register(definition(GATE, version="2"))
    assert handle_request(sim.engine, "POST", "/definitions/wf/retire", {}) == (
        200, {"name": "wf", "retired": ["1", "2"]})
    for version in ("1", "2", None):
        with pytest.raises(WorkflowRetired):
            sim.engine.start("wf", version, {}, None)
    status, body = handle_request(sim.engine, "POST", "/definitions/nope/retire", {})
    assert status == 404
    assert body["error"]["message"] == "cannot retire 'nope': no definition named 'nope' is registered"
    status, body = handle_request(sim.engine, "POST", "/definitions/wf/retire", {"version": "9"})
    assert status == 404 and "with version '9'" in body["error"]["message"]
    status, body = handle_request(sim.engine, "POST", "/definitions/wf/retire", {"version": ["1"]})
    assert status == 400 and body["error"]["problems"][0]["path"] == "body.version"


def test_a_child_of_a_retired_workflow_fails_its_parents_step_saying_so() -> None:
    sim = sim_with({"c": {"workflow": "kid"}})
    sim.register(definition(GATE, name="kid"))
    sim.engine.registry.retire("kid")
    sim.start("wf", {}, id="parent")
    sim.run()
    error = sim.describe("parent")["steps"]["c"]["error"]
    assert error["code"] == "WORKFLOW_RETIRED" and "'kid'" in error["message"]
    assert isinstance(WorkflowRetired("x"), UnknownWorkflow)
