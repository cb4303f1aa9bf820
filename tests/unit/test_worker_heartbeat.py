"""Worker SDK with a heartbeat timeout: `started` leaves before the function runs, and
`ctx.heartbeat` is throttled to one message per heartbeat_timeout / 3 with a trailing send."""

from __future__ import annotations

import threading
import time
from typing import Any

from orbit.worker import Worker
from orbit.worker.heartbeat import HeartbeatThrottle


class _Decisions:
    def __init__(self) -> None:
        self.sent: list[tuple[float, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def send_decision(self, message: dict[str, Any]) -> None:
        with self._lock:
            self.sent.append((time.monotonic(), message))

    def kinds(self) -> list[str]:
        with self._lock:
            return [m["kind"] for _, m in self.sent]

    def beats(self) -> list[tuple[float, dict[str, Any]]]:
        with self._lock:
            return [(t, m) for t, m in self.sent if m["kind"] == "heartbeat"]


class _Clock:
    def now_ms(self) -> int:
        return 0


def _dispatch(heartbeat_timeout_ms: int | None) -> dict[str, Any]:
    body = {"kind": "dispatch_task", "execution_id": "e1", "unit": "u", "task": "job", "queue": "default",
            "input": {}, "attempt": 1, "token": "tok", "idempotency_key": "e1:u", "deadline_ms": None}
    if heartbeat_timeout_ms is not None:
        body["heartbeat_timeout_ms"] = heartbeat_timeout_ms
    return body


def _run(fn: Any, heartbeat_timeout_ms: int | None) -> _Decisions:
    queues = _Decisions()
    # A long grace period: without a heartbeat timeout, `started` would wait for the result.
    worker = Worker(queues, None, _Clock(), tasks={"job": fn}, started_grace_s=60)
    worker.process(_dispatch(heartbeat_timeout_ms))
    return queues


def test_started_is_sent_before_the_function_runs_when_the_step_has_a_heartbeat_timeout() -> None:
    seen: list[list[str]] = []
    contexts: list[Any] = []

    def job(input: Any, ctx: Any) -> str:
        seen.append(list(queues_ref[0].kinds()))
        contexts.append(ctx)
        return "ok"

    queues_ref: list[_Decisions] = [_Decisions()]
    Worker(queues_ref[0], None, _Clock(), tasks={"job": job}, started_grace_s=60).process(_dispatch(30_000))
    assert seen == [["started"]]
    assert queues_ref[0].kinds() == ["started", "result"]
    assert contexts[0].heartbeat_timeout_ms == 30_000

    seen.clear()
    queues_ref[0] = _Decisions()
    Worker(queues_ref[0], None, _Clock(), tasks={"job": job}, started_grace_s=60).process(_dispatch(None))
    assert seen == [[]]  # no heartbeat timeout: `started` travels with the result, as before
    assert queues_ref[0].kinds() == ["started", "result"]


def test_heartbeats_are_throttled_to_a_third_of_the_timeout_and_the_latest_details_trail() -> None:
    timeout_ms = 1_500  # one message per 0.5 s

    def job(input: Any, ctx: Any) -> str:
        for n in range(20):  # a burst: one message now, the rest held
            ctx.heartbeat({"n": n})
        give_up = time.monotonic() + 5
        while len(queues.beats()) < 2 and time.monotonic() < give_up:
            time.sleep(0.01)  # the trailing send comes from the throttle's timer
        return "done"

    queues = _Decisions()
    Worker(queues, None, _Clock(), tasks={"job": job}, started_grace_s=60).process(_dispatch(timeout_ms))
    beats = queues.beats()
    assert [m["details"] for _, m in beats] == [{"n": 0}, {"n": 19}]
    assert beats[1][0] - beats[0][0] >= 0.5 - 0.01
    session = beats[0][1]["id"].split(":")[2]
    assert [m["id"] for _, m in beats] == [f"heartbeat:tok:{session}:{i}" for i in (1, 2)]
    assert queues.kinds()[0] == "started" and queues.kinds()[-1] == "result"


def test_held_details_are_dropped_when_the_task_ends_first() -> None:
    def job(input: Any, ctx: Any) -> str:
        ctx.heartbeat("first")
        ctx.heartbeat("held")
        return "done"

    queues = _run(job, 60_000)
    time.sleep(0.05)
    assert [m["details"] for _, m in queues.beats()] == ["first"]
    assert queues.kinds() == ["started", "heartbeat", "result"]


def test_the_throttle_on_a_fake_clock() -> None:
    now = [0.0]
    sent: list[Any] = []

    def send(details: Any) -> bool:
        sent.append(details)
        return details == "cancel me"

    # Without a heartbeat timeout: leading edge only, calls inside the window are dropped.
    plain = HeartbeatThrottle.for_dispatch(None, 10.0, send)
    plain._monotonic = lambda: now[0]
    for t, d in ((0, "a"), (3, "b"), (9.9, "c"), (10, "d")):
        now[0] = t
        plain.beat(d)
    assert sent == ["a", "d"] and plain._timer is None

    sent.clear()
    timed = HeartbeatThrottle.for_dispatch(30_000, 10.0, send)  # 30 s timeout: one per 10 s
    timed._monotonic = lambda: now[0]
    now[0] = 100.0
    assert timed.interval_s == 10.0
    timed.beat("x")
    now[0] = 104.0
    timed.beat("y")
    timed.beat("cancel me")
    assert sent == ["x"] and timed._timer is not None
    timed._timer.cancel()
    timed._flush()  # what the timer does when the window ends
    assert sent == ["x", "cancel me"]
    now[0] = 105.0
    assert timed.beat("z") is True  # the engine withdrew the attempt: the task learns it
    timed.close()
