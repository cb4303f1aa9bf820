"""The worker's answer for a task it does not serve when the step opted into failing at once
(`on_missing_worker: fail`): a readable error, not a Python list. (Without the option the message
waits for a worker: tests/e2e/test_local_missing_worker.py.)"""

from __future__ import annotations

from typing import Any

from orbit.worker import Worker


class _Decisions:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send_decision(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


class _Clock:
    def now_ms(self) -> int:
        return 0


def _dispatch(task: str) -> dict[str, Any]:
    return {"kind": "dispatch_task", "execution_id": "e1", "unit": "u", "task": task, "queue": "default",
            "input": {}, "attempt": 1, "token": "tok", "idempotency_key": "e1:u", "deadline_ms": None,
            "on_missing_worker": "fail"}


def _error_for(tasks: dict[str, Any], task: str) -> dict[str, Any]:
    queues = _Decisions()
    Worker(queues, None, _Clock(), tasks=tasks).process(_dispatch(task))
    [result] = [m for m in queues.sent if m["kind"] == "result"]
    return dict(result["error"])


def test_unknown_task_lists_the_served_tasks_sorted_and_comma_separated() -> None:
    noop = lambda input, ctx: None  # noqa: E731
    error = _error_for({"shop.ship": noop, "example.greet": noop, "orbit.http": noop}, "shop.pay")
    assert error["code"] == "UNKNOWN_TASK" and error["retryable"] is False
    assert error["message"] == (
        "no worker function is registered for task 'shop.pay' in this worker "
        "(it serves: example.greet, orbit.http, shop.ship)"
    )


def test_unknown_task_on_a_worker_serving_nothing_says_so() -> None:
    error = _error_for({}, "shop.pay")
    assert error["message"] == (
        "no worker function is registered for task 'shop.pay' in this worker (it serves no tasks)"
    )
