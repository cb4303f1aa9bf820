"""Custom::OrbitDefinition and Custom::OrbitTaskQueue (orbit/service/definition_resource.py), on the
simulator's engine: the life cycle CloudFormation drives (create, update while executions run, the
clean-up delete, rollback), invalid definitions answered FAILED, and the crash matrix: a crash after
each step of a create or an update, then Lambda's retry of the same request, registers once and
answers the same."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from orbit.aws.definition_resource import put_response
from orbit.errors import WorkflowRetired
from orbit.service.definition_resource import handle
from orbit.testing.simulator import Simulator

from tests.unit.dsl_harness import T0, definition

GATE = {"w": {"wait_for": "go"}}
PREFIX = "orbit-app-"


class Requests:
    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    def answered(self, request_id: str) -> dict[str, Any] | None:
        return self.rows.get(request_id)

    def record(self, request_id: str, response: dict[str, Any]) -> None:
        self.rows[request_id] = json.loads(json.dumps(response))


class Routes:
    def __init__(self) -> None:
        self.urls: dict[str, str] = {}

    def put(self, name: str, url: str) -> None:
        self.urls[name] = url

    def delete(self, name: str, url: str) -> None:
        if self.urls.get(name) == url:
            del self.urls[name]


class Cfn:
    """CloudFormation's side: sends requests, keeps the answers PUT to each ResponseURL."""

    def __init__(self) -> None:
        self.sim = Simulator(start_ms=T0)
        self.requests, self.routes = Requests(), Routes()
        self.answers: list[dict[str, Any]] = []
        self.registered: list[str] = []
        real = self.sim.engine.registry.register

        def counting(wf: Any) -> None:
            real(wf)
            self.registered.append(f"{wf.name}@{wf.version}")

        self.sim.engine.registry.register = counting  # type: ignore[method-assign]
        self.n = 0

    def event(self, kind: str, props: dict[str, Any], physical: str | None = None,
              rtype: str = "Custom::OrbitDefinition") -> dict[str, Any]:
        self.n += 1
        ev = {"RequestType": kind, "RequestId": f"req-{self.n}", "ResponseURL": f"https://s3/answer-{self.n}",
              "ResourceType": rtype, "LogicalResourceId": "Flow", "StackId": "stack/app",
              "ResourceProperties": {"ServiceToken": "arn:fn", **props}}
        if physical is not None:
            ev["PhysicalResourceId"] = physical
        return ev

    def send(self, ev: dict[str, Any], **faults: Any) -> dict[str, Any]:
        respond = faults.get("respond") or (lambda url, body: self.answers.append(body))
        return handle(ev, faults.get("engine", self.sim.engine), self.routes,
                      faults.get("requests", self.requests), respond, PREFIX)


def text(version: str = "1", steps: dict[str, Any] | None = None) -> dict[str, str]:
    return {"Definition": json.dumps(definition(steps or GATE, version=version))}


def test_create_registers_and_answers_name_at_version() -> None:
    cfn = Cfn()
    answer = cfn.send(cfn.event("Create", text()))
    assert answer["Status"] == "SUCCESS" and answer["PhysicalResourceId"] == "wf@1"
    assert answer["Data"]["Name"] == "wf" and answer["Data"]["Hash"].startswith("sha256:")
    assert cfn.answers == [answer] and cfn.registered == ["wf@1"]
    assert cfn.sim.start("wf", {}, id="e1") == "e1"


def test_update_registers_a_new_version_running_stay_on_theirs_and_the_cleanup_retires_the_old() -> None:
    cfn = Cfn()
    cfn.send(cfn.event("Create", text("1")))
    cfn.sim.start("wf", {}, id="old")
    cfn.sim.run_until_idle()
    update = cfn.send(cfn.event("Update", text("2", {"w": {"wait_for": "go"}, "x": {"wait_for": "more"}}),
                                physical="wf@1"))
    assert update["Status"] == "SUCCESS" and update["PhysicalResourceId"] == "wf@2"
    cfn.sim.start("wf", {}, id="new")
    assert cfn.sim.describe("new")["version"] == "2"
    # the id changed, so CloudFormation deletes the old one once the update completed
    assert cfn.send(cfn.event("Delete", {}, physical="wf@1"))["Status"] == "SUCCESS"
    with pytest.raises(WorkflowRetired):
        cfn.sim.engine.start("wf", "1", {}, "refused")
    cfn.sim.signal("old", "go", 1)
    cfn.sim.run()
    assert cfn.sim.describe("old")["status"] == "COMPLETED" and cfn.sim.describe("old")["version"] == "1"
    assert cfn.sim.describe("new")["status"] != "COMPLETED"  # v2 waits for `more` too


def test_delete_retires_new_starts_refused_running_finish() -> None:
    cfn = Cfn()
    cfn.send(cfn.event("Create", text()))
    cfn.sim.start("wf", {}, id="running")
    cfn.sim.run_until_idle()
    assert cfn.send(cfn.event("Delete", {}, physical="wf@1"))["Status"] == "SUCCESS"
    with pytest.raises(WorkflowRetired):
        cfn.sim.engine.start("wf", None, {}, "new")
    cfn.sim.signal("running", "go", 1)
    cfn.sim.run()
    assert cfn.sim.describe("running")["status"] == "COMPLETED"
    # deleting again (a retried request) or something never registered is not an error
    assert cfn.send(cfn.event("Delete", {}, physical="wf@1"))["Status"] == "SUCCESS"
    assert cfn.send(cfn.event("Delete", {}, physical="nope@3"))["Status"] == "SUCCESS"


def test_an_invalid_definition_fails_with_the_validation_error_and_its_rollback_delete_is_a_no_op() -> None:
    cfn = Cfn()
    bad = {"Definition": json.dumps(definition({"s": {"task": "a.b", "next": "nowhere"}}))}
    answer = cfn.send(cfn.event("Create", bad))
    assert answer["Status"] == "FAILED"
    assert answer["Reason"].startswith("Custom::OrbitDefinition Flow: ")
    assert "steps.s.next" in answer["Reason"]
    assert answer["PhysicalResourceId"] == "failed:req-1" and cfn.registered == []
    assert cfn.send(cfn.event("Delete", {}, physical="failed:req-1"))["Status"] == "SUCCESS"
    missing = cfn.send(cfn.event("Create", {}))
    assert missing["Status"] == "FAILED" and "Properties.Definition" in missing["Reason"]
    # a failed update keeps the old id: CloudFormation rolls back to it
    cfn.send(cfn.event("Create", text()))
    failed = cfn.send(cfn.event("Update", bad, physical="wf@1"))
    assert (failed["Status"], failed["PhysicalResourceId"]) == ("FAILED", "wf@1")


def test_a_rollback_update_to_the_old_version_makes_it_latest_again() -> None:
    cfn = Cfn()
    cfn.send(cfn.event("Create", text("1")))
    cfn.send(cfn.event("Update", text("2"), physical="wf@1"))
    back = cfn.send(cfn.event("Update", text("1"), physical="wf@2"))  # UPDATE_ROLLBACK
    assert back["PhysicalResourceId"] == "wf@1" and cfn.registered == ["wf@1", "wf@2", "wf@1"]
    assert cfn.send(cfn.event("Delete", {}, physical="wf@2"))["Status"] == "SUCCESS"  # its clean-up
    cfn.sim.start("wf", {}, id="e")
    assert cfn.sim.describe("e")["version"] == "1"


class Crash(Exception):
    pass


STEPS = ("answered", "register", "record", "respond")


@pytest.mark.parametrize("kind", ["Create", "Update"])
@pytest.mark.parametrize("step", STEPS)
def test_a_crash_after_each_step_then_the_same_request_registers_once_and_answers_the_same(
        kind: str, step: str) -> None:
    cfn = Cfn()
    if kind == "Update":
        cfn.send(cfn.event("Create", text("1")))
        cfn.sim.start("wf", {}, id="running")
        cfn.sim.run_until_idle()
        cfn.registered.clear()
        cfn.answers.clear()
    ev = cfn.event(kind, text("2"), physical="wf@1" if kind == "Update" else None)
    faults: dict[str, Any] = {}
    requests = cfn.requests

    class CrashingRequests:
        def answered(self, request_id: str) -> Any:
            out = requests.answered(request_id)
            if step == "answered":
                raise Crash
            return out

        def record(self, request_id: str, response: dict[str, Any]) -> None:
            requests.record(request_id, response)
            if step == "record":
                raise Crash

    faults["requests"] = CrashingRequests()
    real = cfn.sim.engine.registry.register
    if step == "register":
        def crash_after(wf: Any) -> None:
            real(wf)
            raise Crash
        cfn.sim.engine.registry.register = crash_after  # type: ignore[method-assign]
    if step == "respond":
        def sent_then_crash(url: str, body: dict[str, Any]) -> None:
            cfn.answers.append(body)
            raise Crash
        faults["respond"] = sent_then_crash
    with pytest.raises(Crash):
        cfn.send(ev, **faults)
    cfn.sim.engine.registry.register = real  # type: ignore[method-assign]
    replayed = cfn.send(json.loads(json.dumps(ev)))  # Lambda retries the same invocation
    assert cfn.registered == ["wf@2"], f"{kind}, crash after {step}: registered {cfn.registered}"
    assert replayed["Status"] == "SUCCESS" and replayed["PhysicalResourceId"] == "wf@2"
    assert all(a == replayed for a in cfn.answers)  # every answer sent says the same
    assert [b for b in cfn.sim.engine.registry.builds() if b[1] == "2"].__len__() == 1
    if kind == "Update":  # nothing lost: the execution on v1 goes on
        cfn.sim.signal("running", "go", 1)
        cfn.sim.run()
        assert cfn.sim.describe("running")["status"] == "COMPLETED"
        assert cfn.sim.describe("running")["version"] == "1"


def test_a_replayed_request_answered_before_is_answered_again_without_registering() -> None:
    cfn = Cfn()
    create = cfn.event("Create", text("1"))
    first = cfn.send(create)
    cfn.send(cfn.event("Update", text("2"), physical="wf@1"))
    again = cfn.send(create)  # a late duplicate of the create
    assert again == first and cfn.registered == ["wf@1", "wf@2"]
    cfn.sim.start("wf", {}, id="e")
    assert cfn.sim.describe("e")["version"] == "2"  # the duplicate did not move `latest` back


def test_task_queue_routes_only_queues_with_the_app_prefix() -> None:
    cfn = Cfn()
    url = "https://sqs.eu-west-1.amazonaws.com/123/orbit-app-shop-tasks"
    ok = cfn.send(cfn.event("Create", {"Name": "shop", "QueueUrl": url}, rtype="Custom::OrbitTaskQueue"))
    assert ok["Status"] == "SUCCESS" and cfn.routes.urls == {"shop": url}
    other = cfn.send(cfn.event("Create", {"Name": "x", "QueueUrl": "https://sqs/1/payments"},
                               rtype="Custom::OrbitTaskQueue"))
    assert other["Status"] == "FAILED" and "must be named orbit-app-" in other["Reason"]
    assert cfn.send(cfn.event("Delete", {}, physical=ok["PhysicalResourceId"],
                              rtype="Custom::OrbitTaskQueue"))["Status"] == "SUCCESS"
    assert cfn.routes.urls == {}


def test_the_answer_is_a_real_http_put_without_a_content_type() -> None:
    got: list[tuple[str, str | None, dict[str, Any]]] = []
    status = [200]

    class Receive(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append((self.path, self.headers.get("Content-Type"), json.loads(body)))
            self.send_response(status[0])
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receive)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/presigned?sig=1"
        put_response(url, {"Status": "SUCCESS"})
        assert got == [("/presigned?sig=1", "", {"Status": "SUCCESS"})]
        status[0] = 403  # an expired URL: the invocation fails, so Lambda retries it
        with pytest.raises(OSError):
            put_response(url, {"Status": "SUCCESS"})
    finally:
        server.shutdown()
        server.server_close()


def test_a_task_queue_is_the_stacks_map_then_an_apps_route_then_the_default() -> None:
    from orbit.adapters.sqs import SqsQueues

    asked: list[str] = []

    def routes(name: str) -> str | None:
        asked.append(name)
        return {"shop": "https://sqs/1/orbit-app-shop"}.get(name)

    queues = SqsQueues(None, "https://sqs/1/decisions", {"http": "https://sqs/1/http"}, "https://sqs/1/default",
                       None, routes=routes)
    assert queues.task_url("http") == "https://sqs/1/http"
    assert queues.task_url("shop") == "https://sqs/1/orbit-app-shop"
    assert queues.task_url("inventory") == "https://sqs/1/default"
    assert asked == ["shop", "inventory"]  # the stack's own map is not looked up in the table


def test_routes_are_cached_hits_and_misses_for_their_ttl() -> None:
    from orbit.adapters.dynamodb.routes import TaskRoutes

    class Db:
        def __init__(self) -> None:
            self.gets = 0
            self.items: dict[str, str] = {}

        def get_item(self, **kw: Any) -> dict[str, Any]:
            self.gets += 1
            url = self.items.get(kw["Key"]["pk"]["S"])
            return {"Item": {"url": {"S": url}}} if url else {}

    db, now = Db(), [0.0]
    routes = TaskRoutes(db, "t", ttl_s=30, monotonic=lambda: now[0])
    assert routes.lookup("shop") is None and routes.lookup("shop") is None and db.gets == 1
    db.items["ROUTE#shop"] = "https://sqs/1/orbit-app-shop"
    now[0] = 29.9
    assert routes.lookup("shop") is None  # a miss is trusted for the TTL
    now[0] = 30.0
    assert routes.lookup("shop") == "https://sqs/1/orbit-app-shop" and db.gets == 2
