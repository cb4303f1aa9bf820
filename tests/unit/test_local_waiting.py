"""What `orbit history` says a running execution waits for (orbit.local.waiting + timeline.render),
on describe/history shapes as the API returns them, one case per kind of wait."""

from __future__ import annotations

from orbit.local.timeline import MAX_WAITING_ROWS, render
from orbit.local.waiting import fmt_time, waiting

T0 = 1_795_000_000_000  # 2026-11-18 (any fixed epoch ms)


def ev(seq: int, kind: str, at_s: float = 0, **fields) -> dict:
    return {"seq": seq, "timestamp_ms": T0 + int(at_s * 1000), "type": kind, **fields}


def desc(steps: dict[str, str], status: str = "RUNNING", **extra) -> dict:
    units = {k: {"status": v, "attempt": 1, "output": None, "error": None} for k, v in steps.items()}
    return {"id": "e1", "status": status, "steps": units, **extra}


START = [ev(1, "WorkflowCreated", workflow="wf", version="1"), ev(2, "WorkflowStarted")]


def sched(seq: int, step: str, at_s: float, attempt: int = 1, **fields) -> dict:
    fields = {"queue": "orders", "task": "orders.charge", **fields}
    return ev(seq, "StepScheduled", at_s, step=step, attempt=attempt, **fields)


def test_scheduled_step_waits_for_a_worker_on_its_queue_since_it_was_queued():
    history = [*START, sched(3, "charge", 2, queue_timeout_ms=60_000, deadline_ms=T0 + 62_000)]
    (w,) = waiting(desc({"charge": "SCHEDULED"}), history)
    assert (w.unit, w.kind, w.since_ms) == ("charge", "worker", T0 + 2000)
    assert w.text == (
        f"for a worker for task orders.charge on queue orders since {fmt_time(T0 + 2000)}; "
        f"a worker must take it by {fmt_time(T0 + 62_000)}"
    )


def test_dispatched_step_names_the_worker_and_the_attempt_deadline():
    history = [
        *START,
        sched(3, "charge", 1),
        ev(
            4,
            "StepDispatched",
            3,
            step="charge",
            attempt=1,
            token="t",
            worker_id="w-7",
            deadline_ms=T0 + 9000,
        ),
    ]
    (w,) = waiting(desc({"charge": "DISPATCHED"}), history)
    assert w.kind == "running" and w.since_ms == T0 + 3000
    assert w.text == (
        f"on worker w-7 (queue orders (task orders.charge)) since {fmt_time(T0 + 3000)}; "
        f"the attempt times out at {fmt_time(T0 + 9000)}"
    )


def test_retry_wait_says_when_the_next_attempt_runs_and_after_which_error():
    history = [
        *START,
        sched(3, "fetch", 0),
        ev(
            4,
            "StepAttemptFailed",
            1,
            step="fetch",
            attempt=1,
            error={"code": "UPSTREAM_DOWN", "message": "x"},
        ),
        ev(
            5,
            "RetryScheduled",
            1,
            step="fetch",
            next_attempt=2,
            delay_ms=3_600_000,
            fire_at_ms=T0 + 3_601_000,
        ),
    ]
    (w,) = waiting(desc({"fetch": "RETRY_WAIT"}), history)
    assert w.kind == "retry" and w.attempt == 2  # the attempt it waits to run
    assert w.text == f"retry (attempt 2) at {fmt_time(T0 + 3_601_000)} after UPSTREAM_DOWN"
    text = render(history, desc({"fetch": "RETRY_WAIT"}))
    assert text.splitlines()[-1].endswith(
        f"waiting: retry (attempt 2) at {fmt_time(T0 + 3_601_000)} after UPSTREAM_DOWN"
    )


def test_signal_wait_and_timer_and_the_newest_of_the_two_wins():
    history = [
        *START,
        ev(3, "HookCreated", name="approval", token="tok"),
        ev(4, "WaitStarted", 1, step="approve", signal="approval", deadline_ms=T0 + 86_400_000),
        ev(5, "TimerStarted", 2, step="nap", fire_at_ms=T0 + 7_200_000),
        ev(6, "WaitStarted", 3, step="poke", signal="poke"),
    ]
    found = {
        w.unit: w for w in waiting(desc({"approve": "WAITING", "nap": "WAITING", "poke": "WAITING"}), history)
    }
    assert found["approve"].text == (
        f"signal approval (or its hook) since {fmt_time(T0 + 1000)}; gives up at {fmt_time(T0 + 86_400_000)}"
    )
    assert found["nap"].text == f"timer until {fmt_time(T0 + 7_200_000)}" and found["nap"].kind == "timer"
    assert found["poke"].text == f"signal poke since {fmt_time(T0 + 3000)}"
    assert [
        w.unit for w in waiting(desc({"approve": "WAITING", "nap": "WAITING", "poke": "WAITING"}), history)
    ] == [
        "approve",
        "nap",
        "poke",
    ]  # oldest wait first


def test_child_and_fan_out_steps():
    history = [
        *START,
        ev(3, "ChildStarted", 1, step="invoice", child_id="e1:invoice", workflow="invoicing"),
        ev(4, "StepFanOut", 2, step="ship", items=[1, 2, 3]),
        sched(5, "ship[0]", 2),
        sched(6, "ship[1]", 2),
        ev(7, "StepSucceeded", 3, step="ship[0]", attempt=1),
    ]
    steps = {"invoice": "RUNNING", "ship": "RUNNING", "ship[0]": "SUCCEEDED", "ship[1]": "SCHEDULED"}
    found = {w.unit: w for w in waiting(desc(steps), history)}
    assert set(found) == {"invoice", "ship", "ship[1]"}
    assert found["invoice"].text == f"child execution e1:invoice (invoicing) since {fmt_time(T0 + 1000)}"
    assert found["ship"].text == f"1 of 3 elements ended, since {fmt_time(T0 + 2000)}"


def test_the_history_read_after_the_describe_wins_and_an_unexplained_status_is_shown_as_is():
    history = [
        *START,
        sched(3, "a", 1),
        ev(4, "StepDispatched", 2, step="a", attempt=1, token="t", worker_id="w-1"),
        sched(5, "b", 1),
        ev(6, "StepSucceeded", 2, step="b", attempt=1),
    ]
    found = waiting(desc({"a": "SCHEDULED", "b": "SCHEDULED", "c": "UNCERTAIN"}), history)
    assert [(w.unit, w.kind) for w in found] == [("c", "other"), ("a", "running")]  # b ended since
    assert found[0].text == "status UNCERTAIN"
    ended = [*history, ev(7, "WorkflowCompleted", 3)]
    assert waiting(desc({"a": "SCHEDULED"}), ended) == []


def test_an_ended_execution_waits_for_nothing_and_render_without_describe_is_unchanged():
    history = [*START, sched(3, "a", 1)]
    assert waiting(desc({"a": "SCHEDULED"}, status="FAILED"), history) == []
    assert "waiting" not in render(history)
    assert render(history, desc({"a": "SCHEDULED"})).splitlines()[-1].split()[:4] == ["1.0s", "a", "1", "-"]


def test_render_caps_the_waiting_rows_and_says_where_to_see_the_rest():
    n = MAX_WAITING_ROWS + 5
    history = [*START, *(sched(3 + i, f"s[{i}]", 1) for i in range(n))]
    lines = render(history, desc({f"s[{i}]": "SCHEDULED" for i in range(n)})).splitlines()
    assert sum("waiting: for a worker" in line for line in lines) == MAX_WAITING_ROWS
    assert lines[-1].endswith("waiting: 5 more (orbit describe e1 lists every step)")


def test_a_fan_out_whose_list_is_kept_in_s3_counts_the_elements_started():
    history = [*START, ev(3, "StepFanOut", 2, step="ship", items=None, stored_values=[["items"]]),
               sched(4, "ship[0]", 2), sched(5, "ship[1]", 2),
               ev(6, "StepSucceeded", 3, step="ship[0]", attempt=1)]
    steps = {"ship": "RUNNING", "ship[0]": "SUCCEEDED", "ship[1]": "SCHEDULED"}
    found = {w.unit: w for w in waiting(desc(steps), history)}
    expected = f"1 of 2 started elements ended (the list is kept in S3), since {fmt_time(T0 + 2000)}"
    assert found["ship"].text == expected
