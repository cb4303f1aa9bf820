"""A schedule's state and what each event does to it (pure: `now` comes in as an argument).

The service loads a `ScheduleState`, calls one of the functions below, and
writes the result back conditionally on `rev` (claim); then it starts what
`pending` lists and cancels what `cancels` lists, and writes again with both
emptied (advance). Starting is idempotent (the execution id is
`<schedule id>:<occurrence>`), so a crash between the two writes is repaired by
whoever loads the schedule next: `pending` is carried out again, nothing twice.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from orbit.core.history.storable import SCHEDULE_ID_PREFIX
from orbit.core.schedule.config import Config, parse_config
from orbit.core.schedule.spec import LAST_MS, Budget, SearchExhausted
from orbit.core.schedule.times import format_time
from orbit.errors import ValidationError

MAX_ACTIONS = 10
MAX_BUFFERED = 1_000
MAX_BACKFILL = 1_000
MAX_CATCHUP_FIRES = 1_000
# Past occurrences counted as missed per event, at most (an outage of years on a `* * * * *`).
MAX_MISSED_COUNT = 100_000
PARENT_PREFIX = SCHEDULE_ID_PREFIX  # the parent id a scheduled run reports its end to
FAILED = ("FAILED", "TIMED_OUT")


def execution_id(schedule_id: str, occurrence_ms: int) -> str:
    return f"{schedule_id}:{format_time(occurrence_ms)}"


@dataclass
class ScheduleState:
    config: Config
    created_at_ms: int
    updated_at_ms: int = 0
    watermark_ms: int = 0  # every occurrence at or before it has been handled
    paused: bool = False
    note: str = ""
    running: list[str] = field(default_factory=list)
    buffered: list[int] = field(default_factory=list)
    # claimed starts, {execution_id, occurrence_ms}, not yet carried out
    pending: list[dict[str, Any]] = field(default_factory=list)
    cancels: list[str] = field(default_factory=list)  # claimed cancels (cancel_other)
    actions: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    armed_ms: int | None = None  # when the next fire is armed for (None: nothing armed)
    rev: int = 0

    @property
    def schedule_id(self) -> str:
        return self.config.schedule_id

    def to_dict(self) -> dict[str, Any]:
        d = {k: copy.deepcopy(v) for k, v in self.__dict__.items() if k != "config"}
        d["config"] = self.config.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ScheduleState:
        names = cls.__dataclass_fields__
        fields = {k: copy.deepcopy(v) for k, v in d.items() if k != "config" and k in names}
        return cls(config=parse_config(d["config"]), **fields)

    def copy(self) -> ScheduleState:
        return ScheduleState(config=self.config, **{k: copy.deepcopy(v) for k, v in self.__dict__.items()
                                                    if k != "config"})

    # ------------------------------------------------------------ reading
    def next_occurrences(self, now_ms: int, n: int = 5) -> list[int]:
        return self.config.spec.between(max(self.watermark_ms, now_ms), 2**62, n)

    def _next(self, now_ms: int, n: int) -> tuple[list[str], str | None]:
        """The next `n` occurrences as text, and why they may be fewer (a read never fails on them)."""
        try:
            return [format_time(o) for o in self.next_occurrences(now_ms, n)], None
        except SearchExhausted as e:
            return [], str(e)

    def describe(self, now_ms: int) -> dict[str, Any]:
        c = self.config.to_dict()
        nxt, problem = self._next(now_ms, 5)
        return {
            **c,
            "state": {
                "paused": self.paused,
                "note": self.note,
                "running": list(self.running),
                "buffered": [_shown(o) for o in self.buffered],
                "counts": dict(self.counts),
                "last_occurrence": _shown(self.watermark_ms) if self.watermark_ms else None,
                "armed_at": None if self.armed_ms is None else _shown(self.armed_ms),
            },
            "actions": list(reversed(self.actions)),  # newest first
            "next_occurrences": nxt,
            **({"next_problem": problem} if problem else {}),
            "created_at": _shown(self.created_at_ms),
            "updated_at": _shown(self.updated_at_ms or self.created_at_ms),
        }

    def summary(self, now_ms: int) -> dict[str, Any]:
        nxt, problem = self._next(now_ms, 1)
        return {"id": self.schedule_id, "workflow": self.config.workflow, "paused": self.paused,
                "spec": self.config.spec.to_dict(), "next_occurrence": nxt[0] if nxt else None,
                "running": len(self.running), **({"next_problem": problem} if problem else {})}


def _shown(ms: Any) -> str:
    """A stored instant as RFC 3339; one no date can spell (a row written by hand) as itself."""
    try:
        return format_time(int(ms))
    except (OverflowError, ValueError, TypeError, OSError):
        return f"out of range: {ms!r}"


def check_runs(config: Config, now_ms: int) -> None:
    """ValidationError unless the schedule's next occurrence after `now_ms` can be found within one
    question's budget and falls before the year 9999 ends (or the schedule's `end` came first)."""
    budget = Budget()
    if config.spec.next_after(now_ms, budget) is None and budget.past_last:  # SearchExhausted: a 400 too
        raise ValidationError(f"has no occurrence after {format_time(now_ms)} and before "
                              f"{format_time(LAST_MS)}: nothing would ever run", "spec")


def new_state(config: Config, now_ms: int) -> ScheduleState:
    s = ScheduleState(config=config, created_at_ms=now_ms, updated_at_ms=now_ms, watermark_ms=now_ms)
    rearm(s)
    return s


# ---------------------------------------------------------------- events
def tick(s: ScheduleState, now_ms: int, still_running: set[str]) -> None:
    """The clock fired: handle every occurrence due by `now_ms` (in order) under the policies."""
    _refresh(s, still_running)
    spec, window = s.config.spec, s.config.catchup_window_ms
    if s.paused:
        _count(s, "skipped_paused", _skip_until(s, now_ms))
    else:
        # older than the catch-up window: skipped and counted, never started
        _count(s, "missed_catchup", _skip_until(s, now_ms - window - 1))
        budget = Budget()  # one search budget for this fire, whatever it catches up
        for _ in range(MAX_CATCHUP_FIRES):
            try:
                o = spec.next_after(s.watermark_ms, budget)
            except SearchExhausted as e:  # all excluded up to the cursor: the next fire searches on
                s.watermark_ms = max(s.watermark_ms, min(e.cursor_ms, now_ms))
                break
            if o is None or o > now_ms or spec.fire_at(s.schedule_id, o) > now_ms:
                break
            s.watermark_ms = o
            _occur(s, o, s.config.overlap, "schedule", now_ms)
    s.updated_at_ms = now_ms
    rearm(s)


def run_ended(s: ScheduleState, eid: str, status: str, now_ms: int, still_running: set[str]) -> None:
    """A run this schedule started has ended: record the outcome, maybe pause, start a buffered one."""
    for a in s.actions:
        if a.get("execution_id") == eid:
            a["outcome"] = status
    if eid in s.running:
        s.running.remove(eid)
        if status in FAILED and s.config.pause_on_failure and not s.paused:
            s.paused = True
            s.note = f"paused: run {eid} ended {status}"
            _count(s, "paused_on_failure", 1)
    _refresh(s, still_running)
    _drain(s, now_ms)
    s.updated_at_ms = now_ms
    rearm(s)


def trigger(s: ScheduleState, now_ms: int, overlap: str | None = None) -> str | None:
    """Start now (under `overlap`, the schedule's own by default); returns the run's id if started."""
    o = now_ms - now_ms % 1000
    started = _occur(s, o, overlap or s.config.overlap, "trigger", now_ms)
    s.updated_at_ms = now_ms
    return started


def backfill(s: ScheduleState, occurrences: list[int], overlap: str, now_ms: int) -> list[str]:
    """Act on past occurrences as if each fired in turn (under the backfill's `overlap`)."""
    started = [e for o in occurrences if (e := _occur(s, o, overlap, "backfill", now_ms))]
    s.updated_at_ms = now_ms
    return started


def pause(s: ScheduleState, note: str, now_ms: int) -> None:
    s.paused, s.note, s.updated_at_ms = True, note, now_ms
    rearm(s)


def resume(s: ScheduleState, note: str, now_ms: int, still_running: set[str]) -> None:
    """Resume from now: what fell due while paused is not caught up."""
    if s.paused:
        _count(s, "skipped_paused", _skip_until(s, now_ms))
    s.paused, s.note, s.updated_at_ms = False, note, now_ms
    _refresh(s, still_running)
    _drain(s, now_ms)
    rearm(s)


def update(s: ScheduleState, config: Config, now_ms: int) -> None:
    """New spec and policies from now on (occurrences already handled stay handled)."""
    s.config = config
    s.watermark_ms = max(s.watermark_ms, now_ms)
    s.updated_at_ms = now_ms
    rearm(s)


def rearm(s: ScheduleState) -> None:
    """When the clock must next fire: the next occurrence plus its jitter (None while paused)."""
    try:
        nxt = None if s.paused else s.config.spec.next_after(s.watermark_ms)
    except SearchExhausted as e:  # every candidate up to the cursor is excluded: fire there, search on
        s.armed_ms = e.cursor_ms
        return
    s.armed_ms = None if nxt is None else s.config.spec.fire_at(s.schedule_id, nxt)


def settled(s: ScheduleState) -> None:
    """The claimed starts and cancels were carried out."""
    s.pending, s.cancels = [], []


# ---------------------------------------------------------------- helpers
def _occur(s: ScheduleState, o: int, overlap: str, source: str, now_ms: int) -> str | None:
    if s.running:
        if overlap == "skip" or (overlap == "buffer_one" and s.buffered) or (
            overlap == "buffer_all" and len(s.buffered) >= MAX_BUFFERED
        ):
            _count(s, "skipped_overlap", 1)
            _act(s, o, None, "skipped", source, now_ms)
            return None
        if overlap in ("buffer_one", "buffer_all"):
            if o not in s.buffered:
                s.buffered.append(o)
            _count(s, "buffered", 1)
            _act(s, o, None, "buffered", source, now_ms)
            return None
        if overlap == "cancel_other":
            s.cancels.extend(r for r in s.running if r not in s.cancels)
            _count(s, "cancelled_other", len(s.running))
            s.running = []
    return _start(s, o, source, now_ms)


def _start(s: ScheduleState, o: int, source: str, now_ms: int) -> str:
    eid = execution_id(s.schedule_id, o)
    if eid not in s.running:
        s.running.append(eid)
    if all(p["execution_id"] != eid for p in s.pending):
        s.pending.append({"execution_id": eid, "occurrence_ms": o})
    _count(s, "started", 1)
    _act(s, o, eid, "started", source, now_ms)
    return eid


def _drain(s: ScheduleState, now_ms: int) -> None:
    if not s.paused and not s.running and s.buffered:
        _start(s, s.buffered.pop(0), "buffer", now_ms)


def _refresh(s: ScheduleState, still_running: set[str]) -> None:
    # what the service saw still running; claimed starts count as running until carried out
    pending = {p["execution_id"] for p in s.pending}
    s.running = [r for r in s.running if r in still_running or r in pending]


def _skip_until(s: ScheduleState, until_ms: int) -> int:
    """Mark every occurrence up to `until_ms` handled without acting; returns how many."""
    n = 0
    budget = Budget(MAX_MISSED_COUNT)  # steps, occurrences and excluded blocks alike: bounded work
    try:
        while n < MAX_MISSED_COUNT:
            batch = s.config.spec.between(s.watermark_ms, until_ms, 1_000, budget)
            if not batch:
                break
            n += len(batch)
            s.watermark_ms = batch[-1]
    except SearchExhausted:
        pass  # the count is then a lower bound; every occurrence up to `until_ms` is handled all the same
    s.watermark_ms = max(s.watermark_ms, until_ms)
    return n


def _act(s: ScheduleState, o: int, eid: str | None, action: str, source: str, now_ms: int) -> None:
    s.actions.append({"occurrence": format_time(o), "execution_id": eid, "action": action, "source": source,
                      "at": format_time(now_ms), "outcome": "RUNNING" if eid else None})
    del s.actions[:-MAX_ACTIONS]


def _count(s: ScheduleState, name: str, n: int) -> None:
    if n:
        s.counts[name] = s.counts.get(name, 0) + n
