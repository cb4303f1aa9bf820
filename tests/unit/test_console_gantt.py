"""The console's Gantt rows, from an API-shaped history."""

from __future__ import annotations

from orbit.console.gantt import EXECUTION, gantt


def ev(seq: int, at: int, type_: str, **fields: object) -> dict[str, object]:
    return {"seq": seq, "timestamp_ms": at, "type": type_, **fields}


def test_attempts_backoff_timer_signal_heartbeat_and_compensation() -> None:
    err = {"code": "BOOM", "message": "no"}
    history = [
        ev(1, 0, "WorkflowCreated"),
        ev(2, 0, "StepScheduled", step="a", attempt=1, task="t.a"),
        ev(3, 10, "StepDispatched", step="a", attempt=1, worker_id="w1"),
        ev(4, 15, "StepHeartbeat", step="a", token="x"),
        ev(5, 20, "StepAttemptFailed", step="a", attempt=1, error=err),
        ev(6, 20, "RetryScheduled", step="a", next_attempt=2, delay_ms=100, fire_at_ms=120),
        ev(7, 120, "StepScheduled", step="a", attempt=2, task="t.a"),
        ev(8, 130, "StepDispatched", step="a", attempt=2),
        ev(9, 140, "StepSucceeded", step="a", attempt=2),
        ev(10, 140, "TimerStarted", step="nap", fire_at_ms=200),
        ev(11, 200, "TimerFired", step="nap"),
        ev(12, 200, "WaitStarted", step="ok", signal="approval"),
        ev(13, 250, "SignalConsumed", step="ok", name="approval"),
        ev(14, 250, "CompensationStarted", reason="x", steps=["a"]),
        ev(15, 250, "StepScheduled", step="compensate:a", attempt=1),
        ev(16, 260, "StepDispatched", step="compensate:a", attempt=1),
        ev(17, 270, "StepSucceeded", step="compensate:a", attempt=1),
        ev(18, 270, "CompensationCompleted"),
    ]
    g = gantt(history, now_ms=10_000)
    rows = {r["unit"]: [(s["kind"], s["start_ms"], s["end_ms"]) for s in r["segments"]] for r in g["rows"]}
    assert [r["unit"] for r in g["rows"]] == [EXECUTION, "a", "nap", "ok", "compensate:a"]
    assert rows["a"] == [("queue", 0, 10), ("failed", 10, 20), ("heartbeat", 15, None), ("backoff", 20, 120),
                         ("queue", 120, 130), ("attempt", 130, 140)]
    assert rows["nap"] == [("timer", 140, 200)] and rows["ok"] == [("signal", 200, 250)]
    assert rows[EXECUTION] == [("compensation", 250, 270)]
    assert (g["start_ms"], g["end_ms"]) == (0, 270)


def test_failed_attempt_is_marked_and_open_segments_end_now() -> None:
    err = {"code": "BOOM", "message": "no"}
    history = [
        ev(1, 0, "StepScheduled", step="a", attempt=1),
        ev(2, 5, "StepDispatched", step="a", attempt=1),
        ev(3, 9, "StepAttemptFailed", step="a", attempt=1, error=err),
        ev(4, 9, "StepFanOut", step="f", items=[1, 2]),
        ev(5, 9, "StepScheduled", step="f[0]", attempt=1),
    ]
    g = gantt(history, now_ms=50)
    a, f, f0 = (r["segments"] for r in g["rows"])
    assert a[1] == {"kind": "failed", "start_ms": 5, "end_ms": 9, "attempt": 1, "worker": None,
                    "error": "BOOM: no"}
    assert f == [{"kind": "fanout", "start_ms": 9, "end_ms": 50, "name": "2 elements", "open": True}]
    assert f0[0]["open"] is True and f0[0]["end_ms"] == 50


def test_a_fan_out_whose_list_is_kept_in_s3_is_not_counted_as_empty() -> None:
    from orbit.console.gantt import gantt

    events = [{"seq": 1, "timestamp_ms": 0, "type": "StepFanOut", "step": "each", "items": None,
               "stored_values": [["items"]]},
              {"seq": 2, "timestamp_ms": 5, "type": "StepFanOut", "step": "other", "items": [1, 2]}]
    rows = {r["unit"]: r["segments"][0]["name"] for r in gantt(events, 10)["rows"]}
    assert rows == {"each": "elements (their list is kept in S3)", "other": "2 elements"}


def test_a_running_execution_reaches_now_even_with_nothing_open() -> None:
    """Between one step's end and the next one's schedule nothing is open: a running execution's
    timeline still ends at now (the console redraws it on every refresh); an ended one does not."""
    history = [ev(1, 0, "WorkflowCreated"), ev(2, 0, "StepScheduled", step="a", attempt=1),
               ev(3, 5, "StepDispatched", step="a", attempt=1),
               ev(4, 40, "StepSucceeded", step="a", attempt=1)]
    assert gantt(history, now_ms=9_000, running=True)["end_ms"] == 9_000
    assert gantt(history, now_ms=9_000)["end_ms"] == 40
