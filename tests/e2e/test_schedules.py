"""Schedules end to end on the local stack: EventBridge Scheduler emulated on the virtual clock,
the real decider and API code, time skipping."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from orbit.core.schedule.times import format_time, parse_time
from orbit.errors import ValidationError
from orbit.local import LocalStack, clock

# kept a year: the Paris test describes runs from 20 weeks back, past the default 30-day retention
QUICK = {"orbit": 1, "name": "sched-quick", "version": "1", "retention": "365d",
         "steps": {"done": {"compute": "{% input %}"}}}
SLOW = {"orbit": 1, "name": "sched-slow", "version": "1", "steps": {"work": {"sleep": "40m"}}}
FAILS = {"orbit": 1, "name": "sched-fails", "version": "1",
         "steps": {"boom": {"compute": "{% $error('boom') %}"}}}


@pytest.fixture(scope="module")
def stack():
    with LocalStack(mode="inprocess") as st:
        for d in (QUICK, SLOW, FAILS):
            st.register(d)
        yield st


def _runs(stack, sid):
    return sorted(e["execution_id"] for e in stack.list(limit=500) if e["execution_id"].startswith(sid + ":"))


def _align(stack, minutes: int) -> None:
    """Move virtual time to just after a multiple of `minutes` (so interval tests line up)."""
    now = clock.now_ms()
    step = minutes * 60_000
    clock.advance_ms(step - now % step + 1_000)


def test_mondays_at_nine_in_paris_across_daylight_saving(stack):
    stack.create_schedule("paris-monday", "sched-quick", {"n": 1}, cron="0 9 * * MON",
                          timezone="Europe/Paris")
    start = clock.now_ms()
    stack.advance(20 * 7 * 86_400)
    runs = _runs(stack, "paris-monday")
    # the expected instants, computed independently of cronsim: every Monday 09:00 wall time in Paris
    paris = ZoneInfo("Europe/Paris")
    d = datetime.fromtimestamp(start / 1000, tz=paris).date()
    expected = []
    while len(expected) < 25:
        local = datetime(d.year, d.month, d.day, 9, tzinfo=paris)
        ms = int(local.timestamp() * 1000)
        if local.weekday() == 0 and start < ms <= clock.now_ms():
            expected.append(f"paris-monday:{format_time(ms)}")
        d += timedelta(days=1)
        if ms > clock.now_ms():
            break
    assert runs == sorted(expected) and len(runs) == 20
    hours = {r.split("T")[1][:2] for r in runs}
    assert hours == {"07", "08"}  # 08:00Z in winter, 07:00Z in summer: the DST change is inside
    for r in runs:
        assert stack.describe(r)["status"] == "COMPLETED"
    stack.delete_schedule("paris-monday")


def test_every_15_minutes_skip_while_runs_take_40(stack):
    _align(stack, 15)
    stack.create_schedule("skip15", "sched-slow", every="15m", overlap="skip")
    stack.advance(4 * 3600)
    runs = _runs(stack, "skip15")
    spans = []
    for r in runs:
        h = stack.history(r)
        spans.append((h[0]["timestamp_ms"], h[-1]["timestamp_ms"]))
        assert stack.describe(r)["status"] in ("COMPLETED", "RUNNING")
    for (s1, e1), (s2, _) in zip(spans, spans[1:]):
        assert s2 >= e1, "two runs of a skip schedule overlapped"
    desc = stack.describe_schedule("skip15")
    # 16 occurrences in 4 hours; each run spans 3 of them (40 min, ended by the next 1-minute timer tick)
    assert desc["state"]["counts"]["started"] == len(runs) >= 4
    assert desc["state"]["counts"]["skipped_overlap"] == 16 - len(runs)
    stack.delete_schedule("skip15")


def test_buffer_one_keeps_one_and_starts_it_when_the_run_ends(stack):
    _align(stack, 15)
    stack.create_schedule("buf1", "sched-slow", every="15m", overlap="buffer_one")
    stack.advance(50 * 60)  # fires at +15, +30, +45 minutes: one runs, one is buffered, one skipped
    desc = stack.describe_schedule("buf1")
    assert len(desc["state"]["running"]) == 1
    assert len(desc["state"]["buffered"]) == 1
    assert desc["state"]["counts"]["skipped_overlap"] >= 1
    first = desc["state"]["running"][0]
    buffered = desc["state"]["buffered"][0]
    stack.advance(8 * 60)  # the first run's 40 minutes end before the next fire
    assert stack.describe(first)["status"] == "COMPLETED"
    desc = stack.describe_schedule("buf1")
    assert desc["state"]["running"] == [f"buf1:{buffered}"]  # the buffered occurrence started
    assert desc["state"]["buffered"] == []
    stack.delete_schedule("buf1")


def test_cancel_other_cancels_the_running_one(stack):
    _align(stack, 15)
    stack.create_schedule("cancel15", "sched-slow", every="15m", overlap="cancel_other")
    stack.advance(31 * 60)
    runs = _runs(stack, "cancel15")
    assert len(runs) == 2
    assert stack.describe(runs[0])["status"] == "CANCELLED"
    assert stack.describe(runs[1])["status"] == "RUNNING"
    assert stack.describe_schedule("cancel15")["state"]["counts"]["cancelled_other"] == 1
    stack.delete_schedule("cancel15")


def test_a_three_hour_outage_with_a_one_hour_catchup_window(stack):
    _align(stack, 15)
    stack.create_schedule("outage", "sched-quick", every="15m", overlap="allow_all", catchup_window="1h")
    clock.advance_ms(3 * 3600_000)  # the system is down: nothing runs, nothing fires
    stack.run_until_idle()  # back up: the one armed fire arrives 3 hours late
    desc = stack.describe_schedule("outage")
    counts = desc["state"]["counts"]
    assert counts["started"] == 4  # the occurrences within the last hour
    assert counts["missed_catchup"] == 8  # the older ones: skipped and counted
    assert len(_runs(stack, "outage")) == 4
    stack.delete_schedule("outage")


def test_pause_and_resume(stack):
    _align(stack, 15)
    stack.create_schedule("pausing", "sched-quick", every="15m")
    stack.advance(16 * 60)
    assert len(_runs(stack, "pausing")) == 1
    d = stack.pause_schedule("pausing", "maintenance")
    assert d["state"]["paused"] and d["state"]["note"] == "maintenance"
    assert d["state"]["armed_at"] is None
    stack.advance(60 * 60)
    assert len(_runs(stack, "pausing")) == 1
    d = stack.resume_schedule("pausing", "done")
    assert not d["state"]["paused"] and d["state"]["note"] == "done"
    stack.advance(16 * 60)
    assert len(_runs(stack, "pausing")) == 2  # nothing from the paused hour was caught up
    stack.delete_schedule("pausing")


def test_backfill_of_one_week(stack):
    stack.create_schedule("daily", "sched-quick", {"k": 1}, cron="0 6 * * *", timezone="UTC")
    now = clock.now_ms()
    end = now - now % 86_400_000
    started = stack.backfill_schedule("daily", format_time(end - 7 * 86_400_000), format_time(end))
    assert len(started) == 7
    stack.run_until_idle()
    assert all(stack.describe(e)["status"] == "COMPLETED" for e in started)
    assert stack.backfill_schedule("daily", format_time(end - 7 * 86_400_000), format_time(end)) == started
    assert len(_runs(stack, "daily")) == 7  # the same occurrences again start nothing new
    stack.delete_schedule("daily")


def test_the_same_occurrence_fired_twice_starts_one_execution(stack):
    _align(stack, 15)
    stack.create_schedule("twice", "sched-quick", every="15m")
    stack.advance(15 * 60)
    assert len(_runs(stack, "twice")) == 1
    desc = stack.describe_schedule("twice")
    occurrence = desc["actions"][0]["occurrence"]
    # the clock delivers the same fire again (EventBridge is at-least-once)
    stack.engine.handle_batch([{"kind": "schedule_fire", "execution_id": "schedule:twice", "id": "dup",
                                "schedule_id": "twice", "fire_at_ms": parse_time(occurrence)}])
    stack.run_until_idle()
    assert len(_runs(stack, "twice")) == 1
    assert stack.describe_schedule("twice")["state"]["counts"]["started"] == 1
    stack.delete_schedule("twice")


def test_trigger_and_pause_on_failure(stack):
    stack.create_schedule("fails", "sched-fails", cron="0 0 1 1 *", pause_on_failure=True)
    eid = stack.trigger_schedule("fails")
    stack.run_until_idle()
    assert stack.describe(eid)["status"] == "FAILED"
    desc = stack.describe_schedule("fails")
    assert desc["state"]["paused"] and eid in desc["state"]["note"]
    assert desc["actions"][0]["execution_id"] == eid and desc["actions"][0]["outcome"] == "FAILED"
    stack.delete_schedule("fails")


def test_bad_input_is_refused_naming_the_field_and_creates_nothing(stack):
    cases = [({"cron": "61 * * * *"}, "cron"),
             ({"cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "timezone"),
             ({"every": "1h", "start": "2027-01-02T00:00:00Z", "end": "2027-01-01T00:00:00Z"}, "end")]
    for kw, field in cases:
        with pytest.raises(ValidationError) as e:
            stack.create_schedule("bad", "sched-quick", **kw)
        assert any(p.path == field for p in e.value.problems), e.value
    with pytest.raises(ValidationError) as e:
        stack.create_schedule("bad", "no-such-workflow", every="1h")
    assert e.value.problems[0].path == "workflow"
    assert all(s["id"] != "bad" for s in stack.list_schedules())
    with pytest.raises(ValidationError, match="reserved for schedules"):
        stack.start("sched-quick", {}, id="schedule:mine")


def test_describe_lists_the_next_five_and_list_shows_it(stack):
    stack.create_schedule("listed", "sched-quick", cron="30 2 * * *", timezone="Europe/Paris")
    d = stack.describe_schedule("listed")
    assert len(d["next_occurrences"]) == 5
    assert [s["id"] for s in stack.list_schedules()].count("listed") == 1
    stack.delete_schedule("listed")
    assert all(s["id"] != "listed" for s in stack.list_schedules())
