"""The pure schedule core: occurrences (DST, intervals, bounds, exclusions, jitter) and policies."""

from __future__ import annotations

import pytest
from orbit.core.schedule import state as st
from orbit.core.schedule.config import parse_config
from orbit.core.schedule.times import format_time, parse_time
from orbit.errors import ValidationError

DAY = 86_400_000


def cfg(**kw):
    return parse_config({"id": "s", "workflow": "wf", **kw})


def occ(c, start: str, days: float = 3, n: int = 20):
    t = parse_time(start)
    return [format_time(o) for o in c.spec.between(t, t + int(days * DAY), n)]


def test_0230_fires_once_on_the_spring_forward_day():
    c = cfg(cron="30 2 * * *", timezone="Europe/Paris")
    # 2026-03-29 02:00 -> 03:00 in Paris: 02:30 does not exist; it fires once, at 03:00 CEST
    assert occ(c, "2026-03-28T12:00:00Z") == ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z",
                                              "2026-03-31T00:30:00Z"]


def test_0230_fires_once_on_the_fall_back_day():
    c = cfg(cron="30 2 * * *", timezone="Europe/Paris")
    # 2026-10-25 03:00 -> 02:00: 02:30 happens twice; it fires once, at the first (CEST)
    assert occ(c, "2026-10-24T12:00:00Z") == ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z",
                                              "2026-10-27T01:30:00Z"]


def test_new_york_spring_forward_and_utc_offsets():
    c = cfg(cron="0 9 * * 1", timezone="America/New_York")
    assert occ(c, "2027-03-01T00:00:00Z", days=21) == ["2027-03-01T14:00:00Z", "2027-03-08T14:00:00Z",
                                                       "2027-03-15T13:00:00Z"]


def test_interval_with_offset_ignores_daylight_saving():
    c = cfg(every="15m", offset="5m", timezone="Europe/Paris")
    assert occ(c, "2026-10-25T00:00:00Z", days=1 / 24) == [
        "2026-10-25T00:05:00Z", "2026-10-25T00:20:00Z", "2026-10-25T00:35:00Z", "2026-10-25T00:50:00Z"]


def test_start_end_and_exclusions():
    c = cfg(cron="0 12 * * *", start="2027-01-03T00:00:00Z", end="2027-01-08T00:00:00Z",
            exclude=["2027-01-05", "0 12 * * SAT",
                     {"start": "2027-01-06T00:00:00Z", "end": "2027-01-07T00:00:00Z"}])
    # 3 Sun, 4 Mon, 5 excluded date, 6 excluded range, 7 Thu; 8 is past the end
    assert occ(c, "2027-01-01T00:00:00Z", days=30) == ["2027-01-03T12:00:00Z", "2027-01-04T12:00:00Z",
                                                       "2027-01-07T12:00:00Z"]


def test_jitter_is_stable_and_bounded():
    c = cfg(every="1h", jitter="10m")
    o = parse_time("2027-01-01T00:00:00Z")
    fires = [c.spec.fire_at("s", o + i * 3_600_000) - (o + i * 3_600_000) for i in range(50)]
    assert all(0 <= f <= 600_000 for f in fires) and len(set(fires)) > 10
    assert c.spec.fire_at("s", o) == c.spec.fire_at("s", o)


@pytest.mark.parametrize("raw,path", [
    ({"cron": "0 9 * *"}, "cron"), ({"cron": "0 25 * * *"}, "cron"),
    ({"cron": "0 9 * * *", "timezone": "X/Y"}, "timezone"),
    ({"every": "0s"}, "every"), ({"every": "1h", "offset": "2h"}, "offset"), ({"every": "soon"}, "every"),
    ({"every": "1h", "start": "2027-01-02T00:00:00Z", "end": "2027-01-01T00:00:00Z"}, "end"),
    ({"every": "1h", "start": "tomorrow"}, "start"), ({"every": "1h", "overlap": "queue"}, "overlap"),
    ({"every": "1h", "exclude": [42]}, "exclude[0]"), ({}, ""), ({"every": "1h", "cron": "* * * * *"}, ""),
    ({"every": "1h", "timezone": "../../etc/passwd"}, "timezone"), ({"every": "1h", "catchup_window": -1},
                                                                    "catchup_window"),
])
def test_bad_specs_name_the_field(raw, path):
    with pytest.raises(ValidationError) as e:
        cfg(**raw)
    assert path in [p.path for p in e.value.problems]


def test_bad_ids_are_refused():
    for bad in ("", "a b", "x" * 101, "-lead", "a:b"):
        with pytest.raises(ValidationError) as e:
            parse_config({"id": bad, "workflow": "wf", "every": "1h"})
        assert e.value.problems[0].path == "id"


def test_config_round_trips_through_its_stored_form():
    c = cfg(cron="0 9 * * MON", timezone="Europe/Paris", jitter="30s", exclude=["2027-01-04"],
            overlap="buffer_all", catchup_window="2h", pause_on_failure=True, input={"a": 1})
    assert parse_config(c.to_dict()) == c


# ---------------------------------------------------------------- policies
T0 = parse_time("2027-01-01T00:00:00Z")
M15 = 15 * 60_000


def fresh(**kw):
    return st.new_state(cfg(every="15m", **kw), T0)


def test_tick_starts_each_due_occurrence_under_skip():
    s = fresh()
    st.tick(s, T0 + M15, set())
    assert s.running == ["s:2027-01-01T00:15:00Z"] and s.pending[0]["occurrence_ms"] == T0 + M15
    st.settled(s)
    st.tick(s, T0 + 2 * M15, set(s.running))
    assert s.counts == {"started": 1, "skipped_overlap": 1}
    assert s.armed_ms == T0 + 3 * M15


def test_a_repeated_tick_does_nothing():
    s = fresh()
    st.tick(s, T0 + M15, set())
    before = s.to_dict()
    st.tick(s, T0 + M15, set(s.running))
    after = s.to_dict()
    assert before["counts"] == after["counts"] and before["pending"] == after["pending"]


def test_buffer_one_and_buffer_all():
    s = fresh(overlap="buffer_one")
    st.tick(s, T0 + 3 * M15, set())
    assert len(s.running) == 1 and len(s.buffered) == 1 and s.counts["skipped_overlap"] == 1
    run = s.running[0]
    st.settled(s)
    st.run_ended(s, run, "COMPLETED", T0 + 4 * M15 - 1, set())
    assert s.running == ["s:2027-01-01T00:30:00Z"] and s.buffered == []
    s = fresh(overlap="buffer_all")
    st.tick(s, T0 + 3 * M15, set())
    assert len(s.buffered) == 2 and "skipped_overlap" not in s.counts


def test_cancel_other_and_allow_all():
    s = fresh(overlap="cancel_other")
    st.tick(s, T0 + 2 * M15, set())
    assert s.cancels == ["s:2027-01-01T00:15:00Z"] and s.running == ["s:2027-01-01T00:30:00Z"]
    s = fresh(overlap="allow_all")
    st.tick(s, T0 + 2 * M15, set())
    assert len(s.running) == 2 and not s.cancels


def test_catchup_window_fires_recent_and_counts_old():
    s = fresh(overlap="allow_all", catchup_window="1h")
    st.tick(s, T0 + 12 * M15, set())  # 3 hours late
    assert s.counts == {"missed_catchup": 7, "started": 5}  # 02:00 is exactly 1h old: still inside
    assert s.watermark_ms == T0 + 12 * M15


def test_pause_skips_resume_does_not_catch_up_and_pause_on_failure():
    s = fresh()
    st.pause(s, "n", T0)
    assert s.armed_ms is None
    st.tick(s, T0 + 4 * M15, set())
    assert s.counts == {"skipped_paused": 4} and not s.pending
    st.resume(s, "back", T0 + 5 * M15 + 1, set())
    assert s.armed_ms == T0 + 6 * M15 and s.counts["skipped_paused"] == 5
    s = fresh(pause_on_failure=True)
    st.tick(s, T0 + M15, set())
    st.settled(s)
    st.run_ended(s, s.running[0], "FAILED", T0 + M15 + 5, set())
    assert s.paused and "FAILED" in s.note and s.actions[-1]["outcome"] == "FAILED"


def test_backfill_and_trigger_use_deterministic_ids():
    s = fresh()
    occs = s.config.spec.between(T0 - 4 * M15 - 1, T0 - 1, 100)
    ids = st.backfill(s, occs, "allow_all", T0 + 1)
    assert ids == [st.execution_id("s", o) for o in occs] and len(ids) == 4
    assert st.trigger(s, T0 + 1500, "allow_all") == "s:2027-01-01T00:00:01Z"
    assert len(s.actions) <= st.MAX_ACTIONS
