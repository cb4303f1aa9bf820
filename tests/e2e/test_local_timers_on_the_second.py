"""Timers and schedules on the second, on the local stack's virtual clock (issue 30 §2).

A timer longer than SQS's 15 minutes is an item in the table; the timers function's minute tick
hands it to SQS up to 15 minutes ahead, delayed to its second, so it fires within a second of its
time instead of at the next tick (up to a minute late). A schedule's EventBridge Scheduler fire
(modelled with AWS's 60-second invocation window) is armed a minute early and delayed by the
decider to its second. docs/decisions/timers-on-the-second.md.
"""

from __future__ import annotations

import pytest
from orbit.local import LocalStack, clock

NAP = {"orbit": 1, "name": "nap-until", "version": "1",
       "steps": {"nap": {"sleep": {"until": "{% input.at %}"}}}}
# a wait whose timeout (a table timer) ends it, and a workflow timeout: the same timers, on the second
WAITS = {"orbit": 1, "name": "wait-out", "version": "1", "timeout": "3h",
         "signals": {"never": {}},
         "steps": {"w": {"wait_for": "never", "timeout": "47m", "on_failure": "continue"},
                   "z": {"sleep": "5h", "after": ["w"]}}}
QUICK = {"orbit": 1, "name": "tick-quick", "version": "1", "steps": {"done": {"compute": "{% input %}"}}}
# 16 min 7.3 s .. 5 h 3 min: odd lengths, so no timer lines up with the minute tick
LENGTHS_MS = (967_300, 1_234_567, 2_700_001, 3_600_999, 7_777_777, 18_181_818)
SLACK_MS = 400  # the local handlers' wall time, which the virtual clock counts (before: up to 60 s late)


@pytest.fixture(scope="module")
def stack():
    with LocalStack(mode="inprocess") as st:
        st.register(NAP)
        st.register(QUICK)
        st.register(WAITS)
        yield st


def _lateness_ms(stack, eid: str) -> int:
    h = stack.history(eid)
    started = next(e for e in h if e["type"] == "TimerStarted")
    fired = next(e for e in h if e["type"] == "TimerFired")
    return int(fired["timestamp_ms"]) - int(started["fire_at_ms"])


def test_timers_longer_than_15_minutes_fire_within_a_second(stack):
    ids = []
    for i, length in enumerate(LENGTHS_MS):
        ids.append(stack.start("nap-until", {"at": clock.now_ms() + length}, id=f"nap-{i}"))
    for eid in ids:
        assert stack.run_until_done(eid)["status"] == "COMPLETED"
    late = {eid: _lateness_ms(stack, eid) for eid in ids}
    # never early; within the second the delay is rounded up to, plus the local handlers' own wall
    # time (virtual time is wall time plus an offset: a busy pump adds its milliseconds)
    assert all(0 <= ms < 1_000 + SLACK_MS for ms in late.values()), late
    assert stack.services.table_timers.next_fire_ms() is None  # every table timer was handed over


def test_a_wait_timeout_and_a_workflow_timeout_land_within_a_second(stack):
    clock.advance_ms(7_777)  # off the minute
    eid = stack.start("wait-out", {}, id="wait-out-1")
    desc = stack.run_until_done(eid)
    assert desc["status"] == "TIMED_OUT", desc
    h = stack.history(eid)
    wait = next(e for e in h if e["type"] == "WaitStarted")
    failed = next(e for e in h if e["type"] == "StepFailed" and e["step"] == "w")
    ended = next(e for e in h if e["type"] == "WorkflowTimeoutReached")
    late = {"wait": int(failed["timestamp_ms"]) - int(wait["deadline_ms"]),
            "workflow": int(ended["timestamp_ms"]) - int(ended["deadline_ms"])}
    assert all(0 <= ms < 1_000 + SLACK_MS for ms in late.values()), late


def test_schedules_fire_within_a_second_of_their_occurrence(stack):
    at = stack.cloud.at_schedules
    at.precision_ms = 60_000  # AWS: "invokes ... between 1:00:00 and 1:00:59", early or late
    try:
        now = clock.now_ms()
        clock.advance_ms(3_600_000 - now % 3_600_000 + 17_000)  # 17 s past an hour
        # every 7 minutes, offset 13 s: occurrences fall mid-minute, where Scheduler's window bites
        stack.create_schedule("odd7", "tick-quick", {"n": 1}, every="7m", offset="13s")
        stack.advance(70 * 60)
        runs = [e["execution_id"] for e in stack.list(limit=100) if e["execution_id"].startswith("odd7:")]
        assert len(runs) >= 9, runs
        lateness = [_start_lateness(stack, eid) for eid in runs]
        assert all(0 <= ms < 1_000 + SLACK_MS for ms in lateness), lateness
        stack.delete_schedule("odd7")
    finally:
        at.precision_ms = 0


def _start_lateness(stack, eid: str) -> int:
    """The run's first event against its occurrence (named in its id: `<schedule>:<ISO time>`)."""
    from orbit.core.schedule.times import parse_time

    occurrence = parse_time(eid.split(":", 1)[1])
    return int(stack.history(eid)[0]["timestamp_ms"]) - occurrence
