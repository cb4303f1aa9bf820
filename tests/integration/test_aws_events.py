"""Every sample event in events/ is invoked through its real handler on moto."""

from __future__ import annotations

import json
from typing import Any

from harness import EVENTS, load_event
from orbit.adapters.sqs import decode_bodies
from orbit.aws import wiring as aws

HANDLER_OF = {
    "api_register_definition.json": "api", "api_start.json": "api", "api_list.json": "api",
    "api_describe.json": "api", "api_history.json": "api", "api_signal.json": "api",
    "api_resume_hook.json": "api", "api_cancel.json": "api",
    "decider_start.json": "decider", "decider_poison.json": "decider",
    "example_worker_dispatch.json": "example_worker", "http_task_dispatch.json": "http_task",
    "timers_schedule.json": "timers",
}


def test_every_event_file_has_a_handler_here() -> None:
    assert sorted(p.name for p in EVENTS.glob("*.json")) == sorted(HANDLER_OF)


def decision_bodies(cloud: Any, clients: Any) -> list[dict[str, Any]]:
    got = clients.sqs.receive_message(QueueUrl=cloud.stack.queues["DecisionQueue"], MaxNumberOfMessages=10)
    return [b for m in got.get("Messages", []) for b in decode_bodies(m["Body"], None)]


def api(cloud: Any, name: str, body: Any = None, **replace: str) -> tuple[int, Any]:
    event = load_event(name)
    for old, new in replace.items():
        event = json.loads(json.dumps(event).replace(old, new))
    if body is not None:
        event["body"] = json.dumps(body)
    response = cloud.invoke(HANDLER_OF[name], event)
    return response["statusCode"], json.loads(response["body"])


def test_api_events(cloud: Any) -> None:
    assert api(cloud, "api_register_definition.json")[0] == 201
    assert api(cloud, "api_start.json") == (201, {"id": "hello-0001"})
    status, listed = api(cloud, "api_list.json")
    assert status == 200 and [e["execution_id"] for e in listed["executions"]] == ["hello-0001"]
    status, desc = api(cloud, "api_describe.json")
    assert status == 200 and desc["status"] == "RUNNING" and desc["workflow"] == "hello"
    status, history = api(cloud, "api_history.json")
    assert status == 200 and history[0]["type"] == "WorkflowCreated"
    cloud.run_until_idle()  # greet runs; the execution now waits for `approval`
    token = aws.services().engine.hook_token("hello-0001", "approval")  # derived from the stack secret
    status, body = api(cloud, "api_resume_hook.json", HOOK_TOKEN=token)
    assert (status, body) == (202, {"execution_id": "hello-0001"})
    # Before the decider has seen it: a retry of the same request is accepted (idempotent),
    # a second, different resume is refused by the token's conditional update.
    assert api(cloud, "api_resume_hook.json", HOOK_TOKEN=token)[0] == 202
    status, body = api(cloud, "api_resume_hook.json", body={"payload": {"approved": False}}, HOOK_TOKEN=token)
    assert status == 409 and body["error"]["code"] == "CONFLICT"
    cloud.run_until_idle()
    assert aws.services().engine.describe("hello-0001")["status"] == "COMPLETED"
    # resumable once: the same payload again after it was consumed is accepted with no effect (issue 14),
    # another payload still conflicts
    assert api(cloud, "api_resume_hook.json", HOOK_TOKEN=token)[0] == 202
    status, body = api(cloud, "api_resume_hook.json", body={"payload": {"approved": False}}, HOOK_TOKEN=token)
    assert status == 409
    # the execution has ended: a signal or cancel could change nothing and is refused, saying so
    for event in ("api_signal.json", "api_cancel.json"):
        status, body = api(cloud, event)
        assert status == 409 and "has already ended (COMPLETED)" in body["error"]["message"]


def test_signal_payload_is_checked_at_the_api(cloud: Any) -> None:
    api(cloud, "api_register_definition.json")
    api(cloud, "api_start.json")
    status, _ = api(cloud, "api_signal.json", body={"payload": {"approved": "maybe"}})
    assert status == 202  # the schema only requires the key
    status, body = api(cloud, "api_signal.json", body={"payload": {}})
    assert status == 400 and body["error"]["code"] == "PAYLOAD_REFUSED"
    assert "approved" in body["error"]["message"]
    events = [e["type"] for e in aws.services().engine.history("hello-0001")]
    assert "SignalReceived" not in events  # refused payloads record nothing


def test_decider_events(cloud: Any, clients: Any) -> None:
    api(cloud, "api_register_definition.json")
    response = cloud.invoke("decider", load_event("decider_start.json"))
    assert response == {"batchItemFailures": []}
    assert aws.services().engine.describe("hello-0001")["steps"]["greet"]["status"] == "SCHEDULED"
    response = cloud.invoke("decider", load_event("decider_poison.json"))
    assert response == {"batchItemFailures": [{"itemIdentifier": "0a8f1c9e-1d2b-4c3d-9e8f-000000000002"}]}
    assert aws.services().engine.describe("hello-0002")["status"] == "RUNNING"


def test_example_worker_event(cloud: Any, clients: Any) -> None:
    import io
    import logging

    from harness import load_app

    load_app("example_worker")  # its powertools Logger owns the "orbit" logger's handler
    out = io.StringIO()
    handlers = logging.getLogger("orbit").handlers
    streams = [h.setStream(out) for h in handlers if isinstance(h, logging.StreamHandler)]
    # JSON, as on AWS: a local stack started earlier in this process made the handlers readable
    # (orbit/local/readable_logs.py); their own formatter is put back afterwards.
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
    from orbit.local.readable_logs import ReadableFormatter

    formatters = [(h, h.formatter) for h in handlers if isinstance(h.formatter, ReadableFormatter)]
    for h, f in formatters:
        as_json = LambdaPowertoolsFormatter.__new__(LambdaPowertoolsFormatter)
        as_json.__dict__.update(f.__dict__)
        h.setFormatter(as_json)
    try:
        response = cloud.invoke("example_worker", load_event("example_worker_dispatch.json"))
    finally:
        for h, stream in zip([h for h in handlers if isinstance(h, logging.StreamHandler)], streams):
            h.setStream(stream)
        for h, f in formatters:
            h.setFormatter(f)
    logs = [json.loads(line) for line in out.getvalue().splitlines() if line.startswith('{"level"')]
    handled = [entry for entry in logs if entry["message"] == "task message handled"]
    assert handled and handled[0]["execution_id"] == "hello-0001" and handled[0]["step"] == "greet"
    assert response == {"batchItemFailures": []}
    bodies = decision_bodies(cloud, clients)
    assert [b["kind"] for b in bodies] == ["started", "result"]
    assert bodies[1]["output"] == {"greeting": "Hello, Ada!"}
    assert bodies[1]["token"] == "tok-3f9a1c7d5e2b4a6c8d0e1f2a3b4c5d6e"  # the dispatch token, echoed


def test_http_task_event_is_refused_while_disabled(cloud: Any, clients: Any) -> None:
    response = cloud.invoke("http_task", load_event("http_task_dispatch.json"))
    assert response == {"batchItemFailures": []}
    result = [b for b in decision_bodies(cloud, clients) if b["kind"] == "result"][0]
    assert result["error"]["code"] == "ADAPTER_DISABLED" and result["error"]["retryable"] is False


def test_timers_event_fires_due_timers(cloud: Any, clients: Any, clock: Any) -> None:
    timers = aws.services().timers
    timers.arm("hello-0001", clock.now_ms() + 3_600_000)
    timers.arm("hello-0009", clock.now_ms() + 7_200_000)
    assert cloud.invoke("timers", load_event("timers_schedule.json")) == {"fired": 0}
    clock.advance(3_600_000 + 2_000)
    assert cloud.invoke("timers", load_event("timers_schedule.json")) == {"fired": 1}
    fired = [(b["kind"], b["execution_id"]) for b in decision_bodies(cloud, clients)]
    assert fired == [("wake", "hello-0001")]
    assert timers.next_fire_ms() == clock.now_ms() - 2_000 + 3_600_000
