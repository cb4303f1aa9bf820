"""`tasks:` contracts checked at run time, through the real handlers (API -> decider -> worker) on moto.

A worker task that returns an output breaking `tasks.NAME.output` fails its step with
OUTPUT_CONTRACT_VIOLATION and the saga compensates; a step whose input breaks `tasks.NAME.input` is
refused before any message reaches the task queue; an inline step is checked the same way.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from orbit import worker

CALLS: Counter[str] = Counter()

SAGA = {
    "orbit": 1, "name": "contracts-saga", "version": "1",
    "steps": {
        "reserve": {"task": "test.reserve", "input": {"sku": "mug"},
                    "compensate": {"task": "test.release", "input": {"sku": "mug"}}},
        "charge": {"after": ["reserve"], "task": "test.charge", "input": {"amount": "{% input.amount %}"},
                   "retry": {"max_attempts": 3, "backoff": "1s"}},
        "audit": {"after": ["charge"], "task": "test.audit", "inline": True, "on_failure": "continue",
                  "input": {"charge": "{% steps.charge.output.charge_id %}"}},
    },
    "output": {"audit": "{% steps.audit.error.code %}"},
    "tasks": {
        "test.charge": {
            "input": {"type": "object", "required": ["amount"], "properties": {"amount": {"type": "number"}}},
            "output": {"type": "object", "required": ["charge_id"],
                       "properties": {"charge_id": {"type": "string"}}},
        },
        "test.audit": {"output": {"type": "object", "required": ["ok"]}},
    },
}


@worker.task("test.reserve")
def reserve(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    CALLS["reserve"] += 1
    return {"reservation": "r-1"}


@worker.task("test.release")
def release(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    CALLS["release"] += 1
    return {}


@worker.task("test.charge")
def charge(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    CALLS["charge"] += 1
    # amounts over 100 get an id of the wrong type, as a buggy worker release would send
    return {"charge_id": 12345 if input["amount"] > 100 else f"ch-{input['amount']}"}


@worker.task("test.audit")
def audit(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    CALLS["audit"] += 1
    return {"seen": input["charge"]}  # no `ok`: breaks tasks.test.audit.output


def run(cloud: Any, eid: str, amount: Any) -> dict[str, Any]:
    status, body = cloud.api("POST", "/definitions", SAGA)
    assert status in (200, 201), body
    request = {"workflow": "contracts-saga", "input": {"amount": amount}, "id": eid}
    status, body = cloud.api("POST", "/executions", request)
    assert status == 201, body
    cloud.run_until_idle()
    status, desc = cloud.api("GET", f"/executions/{eid}")
    assert status == 200
    return desc


def history_types(cloud: Any, eid: str, step: str) -> list[str]:
    status, history = cloud.api("GET", f"/executions/{eid}/history")
    assert status == 200
    return [e["type"] for e in history if e.get("step") == step]


def test_a_worker_output_breaking_its_contract_fails_the_step_and_the_saga_compensates(cloud: Any) -> None:
    CALLS.clear()
    desc = run(cloud, "tc-out", 500)
    assert desc["status"] == "FAILED", desc
    error = desc["steps"]["charge"]["error"]
    assert error["code"] == "OUTPUT_CONTRACT_VIOLATION" and error["retryable"] is False
    assert error["message"] == ("task 'test.charge' at step 'charge': output.charge_id: 12345 is not of type "
                                "'string' (contract tasks.test.charge.output)")
    assert desc["error"]["code"] == "OUTPUT_CONTRACT_VIOLATION"
    assert desc["steps"]["compensate:reserve"]["status"] == "SUCCEEDED"
    assert history_types(cloud, "tc-out", "charge") == [
        "StepScheduled", "StepDispatched", "StepAttemptFailed", "StepFailed"]  # no retry, no success
    assert CALLS == Counter({"reserve": 1, "charge": 1, "release": 1})
    assert cloud.depth("DecisionDLQ") == 0 and cloud.depth("DefaultTaskDLQ") == 0


def test_an_input_breaking_its_contract_never_reaches_the_task_queue(cloud: Any) -> None:
    CALLS.clear()
    desc = run(cloud, "tc-in", "ten")
    assert desc["status"] == "FAILED", desc
    error = desc["steps"]["charge"]["error"]
    assert error["code"] == "INPUT_CONTRACT_VIOLATION"
    assert error["message"].startswith("task 'test.charge' at step 'charge': input.amount: \"ten\" is not of "
                                       "type 'number'")
    assert history_types(cloud, "tc-in", "charge") == ["StepFailed"]
    assert CALLS == Counter({"reserve": 1, "release": 1})  # the charge task was never called


def test_an_inline_step_breaking_its_contract_fails_and_on_failure_continue_goes_on(cloud: Any) -> None:
    CALLS.clear()
    desc = run(cloud, "tc-inline", 10)
    assert desc["status"] == "COMPLETED", desc
    assert desc["output"] == {"audit": "OUTPUT_CONTRACT_VIOLATION"}
    assert desc["steps"]["audit"]["error"]["message"].startswith(
        "task 'test.audit' at step 'audit': output.ok: 'ok' is a required property")
    assert CALLS == Counter({"reserve": 1, "charge": 1, "audit": 1})


def test_a_definition_whose_contract_is_not_a_valid_schema_is_refused_naming_the_path(cloud: Any) -> None:
    bad = {**SAGA, "tasks": {"test.charge": {"output": {"type": "money"}},
                             "test.audit": {"input": {"$ref": "https://example.com/s.json"}}}}
    status, body = cloud.api("POST", "/definitions", bad)
    assert status == 400, body
    paths = sorted(p["path"] for p in body["error"]["problems"])
    assert paths == ["tasks.test.audit.input", "tasks.test.charge.output"]


BIG = {
    "orbit": 1, "name": "contracts-big", "version": "1",
    "steps": {"make": {"task": "contracts.big", "input": {"text": "{% input.text %}"}},
              "echo": {"task": "contracts.big", "input": {"text": "{% steps.make.output.text %}"}}},
    "output": {"n": "{% $length(steps.echo.output.text) %}"},
    "tasks": {"contracts.big": {"input": {"type": "object", "required": ["text"],
                                     "properties": {"text": {"type": "string", "minLength": 40000}}},
                           "output": {"type": "object", "required": ["text"],
                                      "properties": {"text": {"type": "string", "pattern": "^a+b$"}}}}},
}


@worker.task("contracts.big")
def big(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    return {"text": input["text"]}


def test_values_held_in_s3_are_checked_as_the_values_themselves(cloud: Any) -> None:
    """Inputs and outputs over 32 KB travel as payload references; the contract sees the value."""
    assert cloud.api("POST", "/definitions", BIG)[0] in (200, 201)
    text = "a" * 50_000 + "b"
    status, body = cloud.api("POST", "/executions", {"workflow": "contracts-big", "input": {"text": text},
                                                     "id": "tc-big"})
    assert status == 201, body
    cloud.run_until_idle()
    desc = cloud.api("GET", "/executions/tc-big")[1]
    assert desc["status"] == "COMPLETED" and desc["output"] == {"n": 50_001}, desc.get("error")
