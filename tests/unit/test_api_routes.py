"""The HTTP routing of `orbit.service.http`
over an in-memory engine: answers a user sees from `orbit dev` and AWS."""

from __future__ import annotations

from orbit.service.http import handle_request

from tests.unit.dsl_harness import definition, sim_with


def test_list_refuses_an_unknown_status_naming_the_valid_ones() -> None:
    sim = sim_with({"a": {"compute": "{% 1 %}"}})
    sim.start("wf", {}, id="e1")
    sim.run()
    status, body = handle_request(sim.engine, "GET", "/executions", query={"status": "DONE"})
    assert status == 400
    assert body["error"]["problems"][0]["path"] == "query.status"
    assert "COMPLETED" in body["error"]["problems"][0]["message"]
    status, body = handle_request(sim.engine, "GET", "/executions", query={"status": "COMPLETED"})
    assert status == 200 and [e["execution_id"] for e in body["executions"]] == ["e1"]


def test_cancel_of_an_ended_execution_is_a_409_saying_so() -> None:
    sim = sim_with({"a": {"compute": "{% 1 %}"}})
    sim.start("wf", {}, id="e1")
    sim.run()
    status, body = handle_request(sim.engine, "POST", "/executions/e1/cancel", {"reason": "late"})
    assert status == 409
    assert body["error"]["message"] == "execution 'e1' has already ended (COMPLETED); nothing to cancel"


def test_start_refuses_an_id_that_is_not_a_non_empty_string() -> None:
    sim = sim_with({"a": {"compute": "{% 1 %}"}})
    for bad in (123, "", ["e1"]):
        status, body = handle_request(sim.engine, "POST", "/executions", {"workflow": "wf", "id": bad})
        assert status == 400, body
        assert body["error"]["problems"][0]["path"] == "body.id"
    status, body = handle_request(sim.engine, "POST", "/executions", {"workflow": "wf", "id": None})
    assert status == 201 and body["id"].startswith("wf-")


def test_a_signal_id_that_is_not_a_non_empty_string_is_a_400_not_a_poison_message() -> None:
    sim = sim_with({"w": {"wait_for": "go"}})
    sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    path = "/executions/e1/signals/go"
    for bad in (5, "", {"x": 1}):
        status, body = handle_request(sim.engine, "POST", path, {"payload": 1, "id": bad})
        assert status == 400 and body["error"]["problems"][0]["path"] == "body.id", body
    status, body = handle_request(sim.engine, "POST", path, {"payload": 1, "id": "s-1"})
    assert (status, body) == (202, {"id": "s-1"})
    sim.run()  # no poison message left behind
    assert sim.describe("e1")["steps"]["w"]["output"] == 1


def test_start_with_an_existing_id_and_another_version_is_a_409_naming_both() -> None:
    sim = sim_with({"a": {"compute": "{% 1 %}"}})
    sim.register(definition({"a": {"compute": "{% 2 %}"}}, version="2"))
    start = {"workflow": "wf", "id": "e1", "input": {"x": 1}}
    assert handle_request(sim.engine, "POST", "/executions", {**start, "version": 1}) == (201, {"id": "e1"})
    status, body = handle_request(sim.engine, "POST", "/executions", {**start, "version": 2})
    assert status == 409
    assert body["error"]["message"] == (
        "execution 'e1' already exists with version 1; you asked for version 2 (wf)"
    )


def test_console_reads_counts_workflows_sources_and_list_filters() -> None:
    sim = sim_with({"w": {"wait_for": "go"}, "a": {"after": ["w"], "compute": "{% 1 %}"}})
    for eid in ("ord-1", "ord-2", "pay-1"):
        sim.start("wf", {}, id=eid)
    sim.run_until_idle()
    assert handle_request(sim.engine, "GET", "/counts") == (200, {"counts": {"RUNNING": 3}, "cap": 1_000})
    status, body = handle_request(sim.engine, "GET", "/workflows")
    assert status == 200 and [(w["name"], w["kind"]) for w in body["workflows"]] == [("wf", "definition")]
    build = body["workflows"][0]["versions"][0]["builds"][0]
    status, src = handle_request(sim.engine, "GET", "/workflows/wf", query={"version": "1", "build": build})
    assert status == 200 and src["definition"]["steps"]["w"] == {"wait_for": "go"}
    assert src["signals"] == {"go": None}
    assert handle_request(sim.engine, "GET", "/executions/ord-1/workflow") == (200, src)
    assert handle_request(sim.engine, "GET", "/workflows/wf")[0] == 400  # version and build both needed
    status, body = handle_request(sim.engine, "GET", "/executions", query={"id_prefix": "ord-"})
    assert sorted(e["execution_id"] for e in body["executions"]) == ["ord-1", "ord-2"]
    created = body["executions"][0]["created_at_ms"]
    status, body = handle_request(sim.engine, "GET", "/executions", query={"started_before": str(created)})
    assert status == 200 and body["executions"] == []
    status, body = handle_request(sim.engine, "GET", "/executions", query={"started_after": "x"})
    assert status == 400 and body["error"]["problems"][0]["path"] == "query.started_after"


def test_unpark_answers_202_for_a_parked_execution_and_409_or_404_otherwise() -> None:
    from orbit.core.history.events import TaskError
    from orbit.core.runtime.commands import Park

    from tests.unit.test_engine_service import CodeLike, ScriptedRuntime

    sim = sim_with({"a": {"compute": "{% 1 %}"}})
    sim.start("wf", {}, id="done")
    sim.run_until_idle()
    sim.register(CodeLike("k", ScriptedRuntime([Park(TaskError("NON_DETERMINISM", "x", False))])))
    sim.start("k", {}, id="stuck")
    sim.run_until_idle()
    status, body = handle_request(sim.engine, "POST", "/executions/stuck/unpark")
    assert status == 202 and body["id"].startswith("unpark:")
    sim.run_until_idle()
    parks = [e for e in sim.history("stuck") if e["type"] == "ExecutionParked"]
    assert len(parks) == 2  # tried at once; still diverging, so parked again with a fresh retry
    status, body = handle_request(sim.engine, "POST", "/executions/done/unpark")
    assert status == 409
    assert body["error"]["message"].endswith("has already ended (COMPLETED); nothing to un-park")
    status, body = handle_request(sim.engine, "POST", "/executions/nobody/unpark")
    assert status == 404
    runs = sim_with({"w": {"wait_for": "go"}})
    runs.start("wf", {}, id="e1")
    runs.run_until_idle()
    status, body = handle_request(runs.engine, "POST", "/executions/e1/unpark")
    assert status == 409 and "is not parked (RUNNING)" in body["error"]["message"]
    assert [e["type"] for e in runs.history("e1")][-1] == "WaitStarted"  # nothing was recorded
