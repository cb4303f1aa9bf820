"""A task that returns what history cannot store fails its attempt with VALUE_NOT_STORABLE (issue 25
item 4), through the real handlers on moto: the worker's and the decider's (an inline step).

Before, the encoder raised inside the worker SDK: no result was ever sent, and the execution stayed
RUNNING with the step SCHEDULED for good."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pytest
from orbit import TaskError, worker

WHEN = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
RETURNS: dict[str, tuple[Any, str]] = {  # what the task returns -> where and what the error names
    "datetime": ({"items": [1, 2, {"when": WHEN}]}, "output.items[2].when: datetime"),
    "set": ({"tags": {"a"}}, "output.tags: set"),
    "bytes": ([b"\x00"], "output[0]: bytes"),
    "decimal": ({"price": decimal.Decimal("1.10")}, "output.price: Decimal"),
    "surrogate": ({"text": "a\ud800b"}, "output.text: has a lone surrogate"),
}


@worker.task("unstorable.returns")
def returns(input: Any, ctx: worker.TaskContext) -> Any:
    return RETURNS[input["kind"]][0]


@worker.task("unstorable.beats")
def beats(input: Any, ctx: worker.TaskContext) -> Any:
    ctx.heartbeat({"at": WHEN})  # details history cannot store: dropped, the heartbeat still counts
    return {"ok": True}


@worker.task("unstorable.fails")
def fails(input: Any, ctx: worker.TaskContext) -> Any:
    raise TaskError("DECLINED", "no", retryable=False, details={"at": WHEN})


def run(cloud: Any, eid: str, step: dict[str, Any], kind: str) -> dict[str, Any]:
    name = f"unstorable-{eid}"
    status, body = cloud.api("POST", "/definitions", {"orbit": 1, "name": name, "version": "1",
                                                      "steps": {"t": step}})
    assert status == 201, body
    status, body = cloud.api("POST", "/executions", {"workflow": name, "input": {"kind": kind}, "id": eid})
    assert status == 201, body
    cloud.run_until_idle()
    status, desc = cloud.api("GET", f"/executions/{eid}")
    assert status == 200
    return desc


@pytest.mark.parametrize("inline", [False, True], ids=["worker", "inline"])
@pytest.mark.parametrize("kind", sorted(RETURNS))
def test_a_result_history_cannot_store_fails_the_attempt_naming_path_and_type(
        cloud: Any, kind: str, inline: bool) -> None:
    step = {"task": "unstorable.returns", "input": {"kind": "{% input.kind %}"},
            "retry": {"max_attempts": 3, "backoff": "1s"}, **({"inline": True} if inline else {})}
    desc = run(cloud, f"u-{kind}-{int(inline)}", step, kind)
    assert desc["status"] == "FAILED", desc
    error = desc["steps"]["t"]["error"]
    assert error["code"] == "VALUE_NOT_STORABLE" and not error["retryable"], error
    assert RETURNS[kind][1] in error["message"], error
    assert desc["steps"]["t"]["attempt"] == 1  # not retried: the same code returns the same value
    assert cloud.depth("DecisionDLQ") == 0 and cloud.depth("DefaultTaskDLQ") == 0


@pytest.mark.parametrize("inline", [False, True], ids=["worker", "inline"])
def test_error_details_history_cannot_store_fail_the_attempt_too(cloud: Any, inline: bool) -> None:
    step = {"task": "unstorable.fails", "input": {}, **({"inline": True} if inline else {})}
    desc = run(cloud, f"d-{int(inline)}", step, "x")
    error = desc["steps"]["t"]["error"]
    assert desc["status"] == "FAILED" and error["code"] == "VALUE_NOT_STORABLE", desc
    assert "error.details.at: datetime" in error["message"], error


def test_heartbeat_details_history_cannot_store_are_dropped_and_the_task_goes_on(cloud: Any) -> None:
    desc = run(cloud, "hb", {"task": "unstorable.beats", "input": {}}, "x")
    assert desc["status"] == "COMPLETED" and desc["steps"]["t"]["output"] == {"ok": True}, desc
    status, history = cloud.api("GET", "/executions/hb/history")
    beats = [e for e in history if e["type"] == "StepHeartbeat"]
    assert status == 200 and len(beats) == 1 and beats[0].get("details") is None, beats
