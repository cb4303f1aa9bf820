"""Values user code hands back that history cannot store (issue 25 item 4), on the paths that need
no queue: a code workflow's values, an update's result, a query's answer, signal and update
payloads from in-process callers. Each fails with VALUE_NOT_STORABLE (or a 400 / ValidationError
for a caller's payload), naming the path inside the value and the type found there. The worker
and inline paths run through the real handlers: tests/integration/test_aws_unstorable_values.py."""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any

import orbit
import pytest
from orbit.errors import UpdateFailed, ValidationError
from orbit.service.http import handle_request
from orbit.workflow import CodeRegistry

from tests.unit.code_harness import ID, Harness

WHEN = datetime.datetime(2026, 1, 1)
REG = CodeRegistry()
ANSWERS: dict[str, Any] = {"when": {"items": [0, {"at": WHEN}]}, "tags": {"t": {"a"}},
                           "price": decimal.Decimal(1), "raw": [b"x"], "text": {"s": "\udc00"},
                           "fine": {"ok": [1, "two"]}}


@orbit.workflow("unstorable-code", registry=REG)
def answers(ctx: Any, input: Any) -> Any:
    for name, value in ANSWERS.items():
        ctx.query_handler(name, lambda _, value=value: value)
        ctx.update_handler(name, lambda _, value=value: value)
    ctx.wait_for("go")
    return ANSWERS[input["out"]]


def _query(h: Harness, name: str) -> tuple[int, Any]:
    return handle_request(h.engine, "POST", f"/executions/{ID}/queries/{name}", json.dumps({}), {})


@pytest.mark.parametrize("name,where", [("when", "answer.items[1].at: datetime"), ("tags", "answer.t: set"),
                                        ("price", "answer: Decimal"), ("raw", "answer[0]: bytes"),
                                        ("text", "answer.s: has a lone surrogate")])
def test_a_query_answer_that_is_not_json_is_a_400_naming_path_and_type(name: str, where: str) -> None:
    h = Harness(answers)
    h.start("unstorable-code", {"out": "fine"})
    status, body = _query(h, name)
    assert status == 400 and body["error"]["code"] == "VALUE_NOT_STORABLE", body
    assert where in body["error"]["message"] and f"query {name!r}" in body["error"]["message"]
    assert _query(h, "fine") == (200, {"result": {"ok": [1, "two"]}})


def test_a_definition_query_answer_with_a_lone_surrogate_is_refused_too() -> None:
    from orbit.testing.simulator import Simulator

    sim = Simulator()
    sim.register({"orbit": 1, "name": "q", "version": "1", "steps": {"w": {"wait_for": "go"}},
                  "queries": {"bad": '{% {"k": "\\ud800"} %}'}})
    sim.start("q", {}, id="e1")
    sim.run_until_idle()
    status, body = handle_request(sim.engine, "POST", "/executions/e1/queries/bad", "{}", {})
    assert status == 400 and body["error"]["code"] == "VALUE_NOT_STORABLE", body
    assert "answer.k: has a lone surrogate" in body["error"]["message"]


@pytest.mark.parametrize("name,where", [("when", "result.items[1].at: datetime"),
                                        ("price", "result: Decimal"),
                                        ("text", "result.s: has a lone surrogate")])
def test_an_update_result_that_is_not_json_fails_the_update_and_not_the_run(name: str, where: str) -> None:
    h = Harness(answers)
    h.start("unstorable-code", {"out": "fine"})
    with pytest.raises(UpdateFailed) as failed:
        h.update(ID, name, None)
    assert failed.value.code == "VALUE_NOT_STORABLE" and where in str(failed.value), failed.value
    done = [e for e in h.history() if e["type"] == "UpdateCompleted"]
    assert done[-1]["error"]["code"] == "VALUE_NOT_STORABLE"
    assert h.update(ID, "fine", None) == {"ok": [1, "two"]} and h.describe()["status"] == "RUNNING"


@pytest.mark.parametrize("out,where", [("when", "output.items[1].at: datetime"), ("raw", "output[0]: bytes"),
                                       ("text", "output.s: has a lone surrogate")])
def test_a_code_workflow_result_that_is_not_json_fails_the_run(out: str, where: str) -> None:
    h = Harness(answers)
    h.start("unstorable-code", {"out": out})
    h.signal("go")
    d = h.describe()
    assert d["status"] == "FAILED" and d["error"]["code"] == "VALUE_NOT_STORABLE", d
    assert where in d["error"]["message"] and not d["error"]["retryable"]


@pytest.mark.parametrize("call", ["signal", "update"])
def test_an_in_process_payload_that_is_not_json_is_refused_naming_path_and_type(call: str) -> None:
    h = Harness(answers)
    h.start("unstorable-code", {"out": "fine"})
    before = h.history()
    with pytest.raises(ValidationError, match=r"\.at: datetime is not JSON data"):
        if call == "signal":
            h.signal("go", {"at": WHEN})
        else:
            h.update(ID, "fine", {"at": WHEN})
    assert h.history() == before and h.describe()["status"] == "RUNNING"


def test_the_worker_rule_names_output_and_error_paths() -> None:
    """worker/sdk.storable: the one rule the worker and the inline runner apply before sending."""
    from orbit import TaskError
    from orbit.worker.tasks import storable

    assert storable({"ok": (1, 2)}, None) == ({"ok": (1, 2)}, None)  # a tuple encodes as a list
    output, error = storable({"items": [1, 2, {"when": WHEN}]}, None)
    assert output is None and error is not None and error.code == "VALUE_NOT_STORABLE" and not error.retryable
    assert error.message == "output.items[2].when: datetime is not JSON data"
    _, error = storable(None, TaskError("BAD", "no", details={"d": decimal.Decimal(2)}))
    assert error is not None and error.code == "VALUE_NOT_STORABLE"
    assert error.message.endswith(
        "'BAD', and its error cannot be stored: error.details.d: Decimal is not JSON data")
