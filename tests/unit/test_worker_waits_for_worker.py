"""A task message no function of this worker serves goes back to its queue (issue 26): a new message,
later each time, so it never reaches the dead-letter queue; a copy nobody waits for is dropped."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.errors import NotFound
from orbit.worker import Worker
from orbit.worker.sdk import UNSERVED_DELAYS_S, WAITING_KEY, TaskUnserved


class _Queues:
    def __init__(self) -> None:
        self.decisions: list[dict[str, Any]] = []
        self.tasks: list[tuple[str, dict[str, Any], int]] = []

    def send_decision(self, message: dict[str, Any]) -> None:
        self.decisions.append(message)

    def send_task(self, queue: str, body: dict[str, Any], delay_s: int = 0) -> None:
        self.tasks.append((queue, body, delay_s))


class _Clock:
    now = 1_000_000

    def now_ms(self) -> int:
        return self.now


class _Gone:
    """A history store where every execution is gone (ended and expired)."""

    def load(self, execution_id: str) -> Any:
        raise NotFound(execution_id)


def _dispatch(**extra: Any) -> dict[str, Any]:
    return {"kind": "dispatch_task", "execution_id": "e1", "unit": "u", "task": "shop.pay", "queue": "shop",
            "input": {"x": 1}, "attempt": 1, "token": "tok", "idempotency_key": "e1:u", "deadline_ms": None,
            **extra}


def test_the_message_goes_back_to_its_queue_later_each_time_and_nothing_is_reported() -> None:
    queues = _Queues()
    worker = Worker(queues, None, _Clock(), tasks={"shop.ship": lambda i, c: None})
    body = _dispatch()
    delays = []
    for _ in range(len(UNSERVED_DELAYS_S) + 2):
        worker.process(body)
        queue, body, delay = queues.tasks[-1]
        assert queue == "shop" and body["input"] == {"x": 1} and body["token"] == "tok"
        delays.append(delay)
    assert delays == [*UNSERVED_DELAYS_S, UNSERVED_DELAYS_S[-1], UNSERVED_DELAYS_S[-1]]
    assert body[WAITING_KEY] == len(delays)
    assert queues.decisions == []  # no `started`, no result: the step stays SCHEDULED


def test_a_worker_that_serves_the_task_runs_a_message_that_came_back() -> None:
    queues = _Queues()
    Worker(queues, None, _Clock(), tasks={"shop.pay": lambda i, c: i["x"] + 1}).process(
        _dispatch(**{WAITING_KEY: 3}))
    [result] = [m for m in queues.decisions if m["kind"] == "result"]
    assert result["output"] == 2 and queues.tasks == []


def test_a_copy_nobody_waits_for_is_dropped() -> None:
    queues = _Queues()
    clock = _Clock()
    worker = Worker(queues, None, clock, tasks={})
    worker.process(_dispatch(deadline_ms=clock.now - 61_000))  # the engine timed the attempt out
    gone = Worker(queues, None, clock, tasks={}, history=_Gone())
    gone.process(_dispatch())  # the execution has ended and expired
    assert queues.tasks == [] and queues.decisions == []


def test_without_a_queue_to_send_to_it_is_left_to_sqs_after_the_delay() -> None:
    class _DecisionsOnly:
        def send_decision(self, message: dict[str, Any]) -> None:
            raise AssertionError("nothing is reported")

    visibility: list[int] = []
    with pytest.raises(TaskUnserved, match="no worker serves task 'shop.pay' on queue 'shop'"):
        Worker(_DecisionsOnly(), None, _Clock(), tasks={}).process(_dispatch(), visibility.append)
    assert visibility == [UNSERVED_DELAYS_S[0]]
