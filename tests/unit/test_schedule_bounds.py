"""Every question about a schedule is answered in bounded work (issue 25 item 5).

Exclusions are searched in blocks (an excluded candidate makes the search jump to the end of the
date, range, minute, hour, day or month that excludes it) under a budget of `MAX_STEPS` candidates
per question; a schedule whose exclusions exhaust it at create or update is a 400. A schedule with
no occurrence before the year 9999 ends is a 400, a listing survives any stored row, and a backfill
from year 1 is a 400. The slow cases run in a child process with a time limit (child_run.py), so a
regression fails instead of hanging; the rest count steps."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from cronsim import CronSim
from orbit.core.schedule import state as st
from orbit.core.schedule.config import parse_config
from orbit.core.schedule.spec import MAX_STEPS, Budget, SearchExhausted, parse_spec
from orbit.core.schedule.times import format_time, parse_time
from orbit.errors import ValidationError
from orbit.service.http import handle_request

from tests.unit.child_run import run_in_child
from tests.unit.test_schedule_service import build

SETUP = """
from tests.unit.test_schedule_service import build
from orbit.core.schedule.times import parse_time
def call(engine, method, path, body=None):
    return handle_request(engine, method, path, None if body is None else json.dumps(body), {})
"""
# every minute of January hidden, one minute at a time: 44,640 blocks, more than one budget
JANUARY = ["*/2 * * 1 *", "1-59/2 * * 1 *"]


# ------------------------------------------------------------------ the search is still right
def _walk(spec: Any, after_ms: int, n: int) -> list[int]:
    """The old way: every raw candidate in turn, each exclusion asked of cronsim by a search."""
    out: list[int] = []
    for t in spec._raw(after_ms):
        if len(out) == n or t > after_ms + 40 * 86_400_000:
            break
        local = datetime.fromtimestamp(t / 1000, tz=timezone.utc).astimezone(spec.zone)
        minute = local.replace(second=0, microsecond=0)
        hidden = any(
            (e.day is not None and local.date() == e.day)
            or (e.start_ms is not None and e.start_ms <= t < e.end_ms)
            or (e.cron is not None and next(CronSim(e.cron, minute - timedelta(minutes=1))) == minute)
            for e in spec.exclude)
        if not hidden:
            out.append(t)
    return out


SPECS = [
    {"every": "7m", "exclude": ["* 9-17 * * 1-5", "2027-03-28", "*/3 * * * *"]},
    {"every": "90s", "timezone": "Europe/Paris", "exclude": ["* * 28 3 *", "* 2 * * *", "15-40 * * * *"]},
    {"cron": "*/5 * * * *", "timezone": "America/New_York", "exclude": ["* * * 3 0", "* 1-3 * * *"]},
    {"cron": "30 2 * * *", "timezone": "Europe/Paris", "exclude": ["* * 29 3 *"]},
    {"every": "1h", "timezone": "Asia/Kolkata", "exclude": ["* * * 3 *", {"start": "2027-04-02T00:00:00Z",
                                                                          "end": "2027-04-05T00:00:00Z"}]},
    {"cron": "0 * * * *", "timezone": "America/Sao_Paulo", "exclude": ["* * 1-15 * *", "* * * * 6"]},
]


@pytest.mark.parametrize("raw", SPECS)
def test_jumping_over_excluded_blocks_finds_what_a_walk_finds(raw: dict[str, Any]) -> None:
    spec = parse_spec(raw)
    rng = random.Random(json.dumps(raw))
    for _ in range(3):
        after = parse_time("2027-03-20T00:00:00Z") + rng.randrange(0, 20 * 86_400_000)
        assert [format_time(o) for o in spec.between(after, after + 40 * 86_400_000, 40)] == \
            [format_time(o) for o in _walk(spec, after, 40)]


def test_a_zone_offset_with_seconds_jumps_to_its_own_local_minute() -> None:
    """Amsterdam kept +00:19:32 until 1937: a block ends at the local minute, not the UTC one."""
    spec = parse_spec({"every": "1s", "timezone": "Europe/Amsterdam", "exclude": ["0-30 * * * *"]})
    after = parse_time("1920-06-01T10:11:00Z")  # 10:30:32 local
    assert spec.between(after, after + 3_600_000, 30) == _walk(spec, after, 30)
    assert format_time(spec.next_after(after) or 0) == "1920-06-01T10:11:28Z"  # 10:31:00 local


# ------------------------------------------------------------------ bounded
def test_the_reported_schedule_takes_a_step_per_candidate_it_returns() -> None:
    spec = parse_spec({"every": "1s", "exclude": ["0 0 29 2 *"] * 6})
    budget = Budget()
    inside = parse_time("2028-02-29T00:00:00Z") - 1  # the whole excluded minute lies ahead
    got = spec.between(inside, 2**62, 5, budget)
    assert [format_time(o) for o in got] == [f"2028-02-29T00:01:0{i}Z" for i in range(5)]
    assert MAX_STEPS - budget.left <= 6  # one for the excluded minute, one per occurrence


def test_exclusions_that_hide_everything_are_refused_at_create_within_a_time_limit() -> None:
    got = run_in_child("""
        svc, engine, clock, arm = build()
        # 98 exclusions that each cost a search for the next 29 February, then two that hide the rest
        hiding = ["0 0 29 2 *"] * 98 + ["0-58 * * * *", "59 * * * *"]
        spec = {"id": "s", "workflow": "wf", "every": "1s", "exclude": hiding}
        every = {"id": "t", "workflow": "wf", "every": "1s", "exclude": ["* * * * *"]}
        emit([call(engine, "POST", "/schedules", spec), call(engine, "POST", "/schedules", every),
              call(engine, "GET", "/schedules")])
    """, 30, "an exclusion search without a budget", SETUP)
    (status, body), (status2, body2), listed = got
    assert status == 400 and body["error"]["problems"][0]["path"] == "spec.exclude", body
    assert f"more than {MAX_STEPS} candidate times in a row" in body["error"]["message"]
    assert status2 == 400 and "'* * * * *' excludes every minute" in body2["error"]["message"], body2
    assert listed == [200, {"schedules": [], "next_cursor": None}]


def test_every_question_about_a_schedule_past_its_budget_is_answered_within_a_time_limit() -> None:
    """Created in December (its next occurrence is near), asked in January, which exclusions hide
    minute by minute: describe, list, a fire, a backfill and a resume all answer, in bounded time."""
    got = run_in_child("""
        svc, engine, clock, arm = build()  # 2027-01-01T00:00:00Z
        clock._now = parse_time("2026-12-31T23:00:00Z")
        created = call(engine, "POST", "/schedules", {"id": "s", "workflow": "wf", "every": "1m",
                                                      "exclude": %s})
        clock.set(parse_time("2027-01-10T00:00:00Z"))
        out = [created[0], call(engine, "GET", "/schedules/s"), call(engine, "GET", "/schedules")]
        for msg in arm.due(parse_time("2027-01-10T00:00:00Z")):
            svc.engine.handle_batch([msg])
        out.append(call(engine, "POST", "/schedules/s/backfill",
                        {"start": "2027-01-02T00:00:00Z", "end": "2027-01-09T00:00:00Z"}))
        out.append(call(engine, "POST", "/schedules/s/pause", {}))
        out.append(call(engine, "POST", "/schedules/s/resume", {}))
        emit(out)
    """ % json.dumps(JANUARY), 60, "a question that walks every excluded minute of January", SETUP)
    created, (status, described), (lstatus, listed), (bstatus, backfill), paused, resumed = got
    assert created == 201 and status == 200 and lstatus == 200
    assert described["next_occurrences"] == [] and "more than" in described["next_problem"], described
    assert listed["schedules"][0]["next_occurrence"] is None and listed["schedules"][0]["next_problem"]
    assert bstatus == 400 and "candidate times in a row" in backfill["error"]["message"], backfill
    assert paused[0] == 200 and resumed[0] == 200


def test_fires_carry_the_search_across_a_stretch_longer_than_one_budget() -> None:
    """The fire armed where a search gave up searches on from there: no occurrence is lost."""
    c = parse_config({"id": "s", "workflow": "wf", "every": "1m", "exclude": JANUARY,
                      "catchup_window": "1d"})
    s = st.new_state(c, parse_time("2026-12-31T23:58:30Z"))
    st.tick(s, parse_time("2026-12-31T23:59:00Z"), set())
    st.settled(s)  # the service started it; it ends before the next fire
    assert [a["occurrence"] for a in s.actions] == ["2026-12-31T23:59:00Z"]
    fires = 0
    while s.armed_ms is not None and s.armed_ms < parse_time("2027-02-01T00:00:00Z") and fires < 20:
        st.tick(s, s.armed_ms, set())  # the clock fires when armed, and no earlier
        fires += 1
    assert format_time(s.armed_ms or 0) == "2027-02-01T00:00:00Z", fires
    assert 4 <= fires < 20  # 44,640 blocks: a handful of budgets, one per fire
    st.tick(s, s.armed_ms or 0, set())
    assert s.actions[-1]["occurrence"] == "2027-02-01T00:00:00Z" and s.actions[-1]["action"] == "started"


def test_a_fire_after_a_long_outage_counts_what_it_missed_in_bounded_steps() -> None:
    got = run_in_child("""
        from orbit.core.schedule import state as st
        from orbit.core.schedule.config import parse_config
        c = parse_config({"id": "s", "workflow": "wf", "every": "1s",
                          "exclude": ["0-58 * * * *", "59 0-22 * * *"]})
        s = st.new_state(c, parse_time("2026-12-31T23:00:00Z"))
        st.tick(s, parse_time("2036-12-31T23:00:00Z"), set())
        emit([s.counts, s.watermark_ms >= parse_time("2036-12-30T23:00:00Z")])
    """, 30, "a missed-occurrence count that walks ten years of excluded seconds", SETUP)
    counts, caught_up = got
    assert caught_up and 0 < counts["missed_catchup"] <= st.MAX_MISSED_COUNT, counts


# ------------------------------------------------------------------ the year 9999 and year 1
@pytest.mark.parametrize("raw", [
    {"cron": "0 0 1 1 *", "start": "9999-12-31T23:59:00Z"},
    {"every": "1d", "start": "9999-12-31T00:00:00Z"},
    {"cron": "0 0 1 1 *", "timezone": "Pacific/Kiritimati", "start": "9999-06-01T00:00:00Z"},
])
def test_a_schedule_that_would_first_run_after_the_year_9999_is_a_400(raw: dict[str, Any]) -> None:
    svc, engine, clock, arm = build()
    body = json.dumps({"id": "y", "workflow": "wf", **raw})
    status, body = handle_request(engine, "POST", "/schedules", body, {})
    assert status == 400 and body["error"]["problems"][0]["path"] == "spec", body
    assert "nothing would ever run" in body["error"]["message"]
    assert handle_request(engine, "GET", "/schedules", None, {}) == (200, {"schedules": [],
                                                                         "next_cursor": None})


def test_a_listing_survives_any_stored_row() -> None:
    svc, engine, clock, arm = build()
    assert handle_request(engine, "POST", "/schedules",
                          json.dumps({"id": "ok", "workflow": "wf", "every": "1h"}), {})[0] == 201
    good = svc.store.get("ok")[0]
    # written before the checks existed, by hand, or by an older version
    late = {**good, "config": {**good["config"], "id": "late", "spec": {"cron": "0 0 1 1 *",
                                                                         "start": "9999-12-31T23:59:00Z"}}}
    svc.store.put("late", late, None)
    svc.store.put("junk", {"config": {"id": "junk", "workflow": "wf", "spec": {"every": "no"}}}, None)
    svc.store.put("odd", {**good, "config": {**good["config"], "id": "odd"}, "watermark_ms": 10**18}, None)
    status, body = handle_request(engine, "GET", "/schedules", None, {})
    assert status == 200, body
    rows = {r["id"]: r for r in body["schedules"]}
    assert set(rows) == {"ok", "late", "junk", "odd"}
    assert rows["ok"]["next_occurrence"] == "2027-01-01T01:00:00Z"
    assert rows["late"]["next_occurrence"] is None
    assert "cannot be read" in rows["junk"]["problem"] and "spec.every" in rows["junk"]["problem"]
    assert rows["junk"]["workflow"] == "wf" and rows["junk"]["running"] == 0  # the row's shape, for the UIs
    assert rows["odd"]["next_occurrence"] is None
    assert handle_request(engine, "GET", "/schedules/late", None, {})[0] == 200
    status, odd = handle_request(engine, "GET", "/schedules/odd", None, {})
    assert status == 200 and odd["state"]["last_occurrence"] == f"out of range: {10**18}", odd


@pytest.mark.parametrize("raw", [{"every": "1d"}, {"cron": "0 0 1 1 *", "timezone": "America/Los_Angeles"},
                                 {"cron": "0 0 1 1 *", "timezone": "Pacific/Kiritimati"}])
def test_a_backfill_from_year_1_is_a_400_not_a_500(raw: dict[str, Any]) -> None:
    svc, engine, clock, arm = build()
    assert handle_request(engine, "POST", "/schedules", json.dumps({"id": "b", "workflow": "wf", **raw}),
                          {})[0] == 201
    since_year_1 = {"start": "0001-01-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"}
    status, body = handle_request(engine, "POST", "/schedules/b/backfill", json.dumps(since_year_1), {})
    assert status == 400 and "covers more than 1000 occurrences; split it" in body["error"]["message"], body
    first_years = {"start": "0001-01-01T00:00:00Z", "end": "0003-01-01T00:00:00Z"}
    status, body = handle_request(engine, "POST", "/schedules/b/backfill", json.dumps(first_years), {})
    assert status == 202, body


def test_search_exhausted_is_a_validation_error_naming_the_exclusions() -> None:
    spec = parse_spec({"every": "1s", "exclude": JANUARY})
    with pytest.raises(SearchExhausted) as raised:
        spec.next_after(parse_time("2027-01-01T00:00:00Z"))
    assert isinstance(raised.value, ValidationError) and raised.value.problems[0].path == "spec.exclude"
    assert raised.value.cursor_ms > parse_time("2027-01-01T00:00:00Z")
