"""A schedule's spec: when it has occurrences (pure: no clock, no randomness).

Either a 5-field cron evaluated in an IANA time zone (cronsim does the
arithmetic, daylight saving included: a 02:30 schedule fires at 03:00 on the
spring-forward day and once, at the first 02:30, on the fall-back day), or an
interval with an offset from the Unix epoch (UTC, so daylight saving never
moves it). Optional `start`/`end` bound it, `exclude` removes occurrences
(a local date `2026-12-25`, a cron expression, or `{start, end}`), and
`jitter` delays each fire by a fixed amount derived from the schedule id and
the occurrence (the occurrence, and so the execution id, does not move).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from orbit.core.definition.durations import DurationError, parse_duration
from orbit.core.schedule.times import MAX_MS, MIN_MS, format_time, parse_time
from orbit.errors import Problem, ValidationError

MIN_EVERY_MS = 1_000
MAX_JITTER_MS = 24 * 3_600_000
MAX_EXCLUSIONS = 100
# Candidate instants one question may look at (docs/decisions/sec-values-schedules-bounded.md):
# an excluded candidate costs one step and the search jumps to the end of the block that excludes
# it (a date, a range, the minute, hour, day or month a cron exclusion covers), so exclusions cost
# steps per block, not per occurrence. Past the budget the question stops with SearchExhausted.
MAX_STEPS = 10_000
DAY_MS = 86_400_000
# Occurrences lie between these (a day inside year 1 .. 9999: a day of jitter or of time zone
# offset still formats, and no date arithmetic overflows).
FIRST_MS = MIN_MS + DAY_MS
LAST_MS = MAX_MS - DAY_MS
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class SearchExhausted(ValidationError):
    """A question about a schedule looked at MAX_STEPS candidates without an answer: the exclusions
    hide that many blocks in a row. `cursor_ms`: every candidate up to it is excluded."""

    def __init__(self, cursor_ms: int) -> None:
        self.cursor_ms = cursor_ms
        super().__init__(f"exclusions hide every occurrence from {format_time(cursor_ms)} on for more than "
                         f"{MAX_STEPS} candidate times in a row; remove or narrow some", "spec.exclude")


@dataclass
class Budget:
    """The steps one question may still take (shared by every search the question makes)."""

    left: int = MAX_STEPS
    past_last: bool = False  # a search ran into LAST_MS (the year 9999)

    def step(self, cursor_ms: int) -> None:
        if self.left <= 0:
            raise SearchExhausted(cursor_ms)
        self.left -= 1


@dataclass(frozen=True)
class Exclusion:
    day: date | None = None
    cron: str | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    # the cron exclusion parsed once: matching a minute is then a few set lookups, never a search
    matcher: CronSim | None = field(default=None, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        if self.cron is not None and self.matcher is None:
            object.__setattr__(self, "matcher", CronSim(self.cron, datetime(2000, 1, 1, tzinfo=timezone.utc)))

    def to_json(self) -> Any:
        if self.day is not None:
            return self.day.isoformat()
        if self.cron is not None:
            return self.cron
        return {"start": format_time(self.start_ms or 0), "end": format_time(self.end_ms or 0)}


@dataclass(frozen=True)
class Spec:
    cron: str | None = None
    every_ms: int | None = None
    offset_ms: int = 0
    timezone: str = "UTC"
    start_ms: int | None = None
    end_ms: int | None = None
    jitter_ms: int = 0
    exclude: tuple[Exclusion, ...] = field(default_factory=tuple)

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"timezone": self.timezone}
        if self.cron is not None:
            out["cron"] = self.cron
        else:
            out["every_ms"] = self.every_ms
            out["offset_ms"] = self.offset_ms
        if self.start_ms is not None:
            out["start"] = format_time(self.start_ms)
        if self.end_ms is not None:
            out["end"] = format_time(self.end_ms)
        if self.jitter_ms:
            out["jitter_ms"] = self.jitter_ms
        if self.exclude:
            out["exclude"] = [e.to_json() for e in self.exclude]
        return out

    # ------------------------------------------------------------ occurrences
    def next_after(self, after_ms: int, budget: Budget | None = None) -> int | None:
        """The first occurrence strictly after `after_ms` (ms since the epoch, UTC), or None (past
        `end`, or none before the year 9999 ends: then `budget.past_last`). At most `budget`'s steps
        (a fresh MAX_STEPS if not given); SearchExhausted past them."""
        budget = budget if budget is not None else Budget()
        t = max(after_ms, FIRST_MS) if self.start_ms is None else max(after_ms, self.start_ms - 1, FIRST_MS)
        raw = self._raw(t)
        while True:
            budget.step(t)
            candidate = next(raw, None)
            if candidate is None or candidate > LAST_MS:
                budget.past_last = budget.past_last or self.end_ms is None or self.end_ms > LAST_MS
                return None
            if self.end_ms is not None and candidate > self.end_ms:
                return None
            until = self.excluded_until(candidate)
            if until is None:
                return candidate
            t = max(candidate, until - 1)
            if self.every_ms is not None or until - candidate > 60_000:
                raw = self._raw(t)  # jump over the block (a cron's next minute is past a minute's block)

    def between(self, after_ms: int, until_ms: int, limit: int, budget: Budget | None = None) -> list[int]:
        """Occurrences in (after_ms, until_ms], oldest first, at most `limit`, within one budget."""
        budget = budget if budget is not None else Budget()
        out: list[int] = []
        t = after_ms
        while len(out) < limit:
            nxt = self.next_after(t, budget)
            if nxt is None or nxt > until_ms:
                break
            out.append(nxt)
            t = nxt
        return out

    def _raw(self, after_ms: int) -> Iterator[int]:
        """Occurrences strictly after `after_ms`, ignoring start/end/exclusions."""
        if self.every_ms is not None:
            k = (after_ms - self.offset_ms) // self.every_ms + 1
            while True:
                yield self.offset_ms + k * self.every_ms
                k += 1
        assert self.cron is not None
        # cronsim yields minutes strictly after the given local time, whole minutes only
        try:
            local = datetime.fromtimestamp(after_ms // 1000, tz=timezone.utc).astimezone(self.zone)
            it = CronSim(self.cron, local)
            while True:
                yield int(next(it).timestamp()) * 1000
        except (StopIteration, CronSimError, OverflowError, ValueError):  # none in 50 years, or the year 9999
            return

    def excluded(self, at_ms: int) -> bool:
        return self.excluded_until(at_ms) is not None

    def excluded_until(self, at_ms: int) -> int | None:
        """None when `at_ms` is not excluded; else where the excluded block holding it ends (every
        instant in [at_ms, that end) is excluded by one same exclusion)."""
        if not self.exclude:
            return None
        local = datetime.fromtimestamp(at_ms / 1000, tz=timezone.utc).astimezone(self.zone)
        until: int | None = None
        for e in self.exclude:
            end: int | None = None
            try:
                if e.day is not None and local.date() == e.day:
                    end = self._midnight_after(local)
                elif e.start_ms is not None and e.end_ms is not None and e.start_ms <= at_ms < e.end_ms:
                    end = e.end_ms
                elif e.matcher is not None and _cron_matches(e.matcher, local):
                    end = self._cron_block_end(e.matcher, at_ms, local)
            except (OverflowError, ValueError):  # the block ends past the year 9999: so does the schedule
                end = MAX_MS
            if end is not None and (until is None or end > until):
                until = end
        return until

    def _midnight_after(self, local: datetime) -> int:
        nxt = datetime.combine(local.date() + timedelta(days=1), time(0), tzinfo=self.zone)
        return int(nxt.timestamp()) * 1000

    def _cron_block_end(self, c: CronSim, at_ms: int, local: datetime) -> int:
        """The end of the minute, hour, day or month around `local` that `c` excludes whole."""
        # the local minute's start (a zone's offset may have seconds: local mean time before 1900)
        minute_start = at_ms - local.second * 1000 - local.microsecond // 1000
        if len(c.minutes) < 60:
            return minute_start + 60_000
        if len(c.hours) < 24:
            return minute_start - local.minute * 60_000 + 3_600_000
        if not _every_day(c):
            return self._midnight_after(local)
        first = local.date().replace(day=1) + timedelta(days=32)
        return int(datetime.combine(first.replace(day=1), time(0), tzinfo=self.zone).timestamp()) * 1000

    def fire_at(self, schedule_id: str, occurrence_ms: int) -> int:
        """When the occurrence is fired: the occurrence plus its jitter (stable per occurrence)."""
        if not self.jitter_ms:
            return occurrence_ms
        digest = hashlib.sha256(f"{schedule_id}\n{occurrence_ms}".encode()).digest()
        return occurrence_ms + int.from_bytes(digest[:8], "big") % (self.jitter_ms + 1)


def _cron_matches(c: CronSim, local: datetime) -> bool:
    """Does the cron `c` fire at the local minute of `local` (its fields, as cronsim reads them)?"""
    return (local.minute in c.minutes and local.hour in c.hours and local.month in c.months
            and c.match_day(local.date()))


def _every_day(c: CronSim) -> bool:
    dom = set(range(1, 32)) <= c.days
    dow = set(range(7)) <= {w % 7 for w in c.weekdays if isinstance(w, int)}
    return (dom and dow) if c.day_and else (dom or dow)


def _every_minute(c: CronSim) -> bool:
    return len(c.minutes) == 60 and len(c.hours) == 24 and len(c.months) == 12 and _every_day(c)


def check_cron(expr: Any, path: str, problems: list[Problem]) -> str | None:
    if not isinstance(expr, str) or len(expr.split()) != 5:
        problems.append(Problem(path, f"must be a 5-field cron expression (minute hour day month weekday), "
                                      f"not {expr!r}"))
        return None
    try:
        CronSim(expr, datetime(2000, 1, 1, tzinfo=timezone.utc))
    except CronSimError as e:
        problems.append(Problem(path, f"invalid cron expression {expr!r}: {e}"))
        return None
    return " ".join(expr.split())


def parse_spec(raw: Any, path: str = "spec") -> Spec:
    """A Spec from its JSON form; ValidationError naming every bad field (`spec.cron`, ...)."""
    p = f"{path}." if path else ""
    if not isinstance(raw, dict):
        raise ValidationError("must be an object with `cron` or `every`", path)
    problems: list[Problem] = []
    known = {"cron", "every", "every_ms", "offset", "offset_ms", "timezone", "start", "end", "jitter",
             "jitter_ms", "exclude"}
    problems += [Problem(f"{p}{k}", "unknown field") for k in raw if k not in known]
    tz = raw.get("timezone") or "UTC"
    try:
        if not isinstance(tz, str) or not tz or len(tz) > 64 or ".." in tz or tz.startswith("/"):
            raise ZoneInfoNotFoundError
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        problems.append(Problem(f"{p}timezone", f"unknown IANA time zone {tz!r} (e.g. Europe/Paris, UTC)"))
        tz = "UTC"
    cron = raw.get("cron")
    every = raw.get("every", raw.get("every_ms"))
    every_ms: int | None = None
    offset_ms = 0
    if (cron is None) == (every is None):
        problems.append(Problem(path, "needs exactly one of `cron` or `every`"))
    elif cron is not None:
        cron = check_cron(cron, f"{p}cron", problems)
    else:
        every_ms = _duration(every, f"{p}every", problems)
        if every_ms is not None and every_ms < MIN_EVERY_MS:
            problems.append(Problem(f"{p}every", "must be at least 1s"))
        offset_ms = _duration(raw.get("offset", raw.get("offset_ms", 0)), f"{p}offset", problems) or 0
        if every_ms and offset_ms >= every_ms:
            problems.append(Problem(f"{p}offset", "must be shorter than `every`"))
    start = _time(raw.get("start"), f"{p}start", problems)
    end = _time(raw.get("end"), f"{p}end", problems)
    if start is not None and end is not None and end <= start:
        problems.append(Problem(f"{p}end", "must be after `start`"))
    jitter = _duration(raw.get("jitter", raw.get("jitter_ms", 0)), f"{p}jitter", problems) or 0
    if jitter > MAX_JITTER_MS:
        problems.append(Problem(f"{p}jitter", "must be at most 24h"))
    exclude = _exclusions(raw.get("exclude") or [], f"{p}exclude", problems)
    if problems:
        raise ValidationError(problems)
    return Spec(cron, every_ms, offset_ms, tz, start, end, jitter, exclude)


def _duration(value: Any, path: str, problems: list[Problem]) -> int | None:
    try:
        return parse_duration(value)
    except (DurationError, TypeError, ValueError) as e:
        problems.append(Problem(path, str(e)))
        return None


def _time(value: Any, path: str, problems: list[Problem]) -> int | None:
    if value is None:
        return None
    try:
        return parse_time(value)
    except ValueError as e:
        problems.append(Problem(path, str(e)))
        return None


def _exclusions(raw: Any, path: str, problems: list[Problem]) -> tuple[Exclusion, ...]:
    if not isinstance(raw, list) or len(raw) > MAX_EXCLUSIONS:
        problems.append(Problem(path, f"must be a list of at most {MAX_EXCLUSIONS} exclusions"))
        return ()
    out: list[Exclusion] = []
    for i, item in enumerate(raw):
        where = f"{path}[{i}]"
        if isinstance(item, str) and _DATE.fullmatch(item):
            try:
                out.append(Exclusion(day=date.fromisoformat(item)))
            except ValueError:
                problems.append(Problem(where, f"not a date: {item!r}"))
        elif isinstance(item, str):
            expr = check_cron(item, where, problems)
            if expr:
                exclusion = Exclusion(cron=expr)
                if exclusion.matcher is not None and _every_minute(exclusion.matcher):
                    problems.append(Problem(where, f"{item!r} excludes every minute: nothing would ever run"))
                out.append(exclusion)
        elif isinstance(item, dict) and set(item) == {"start", "end"}:
            s = _time(item["start"], f"{where}.start", problems)
            e = _time(item["end"], f"{where}.end", problems)
            if s is not None and e is not None:
                if e <= s:
                    problems.append(Problem(f"{where}.end", "must be after `start`"))
                out.append(Exclusion(start_ms=s, end_ms=e))
        else:
            problems.append(Problem(where, "must be a local date (2026-12-25), a cron expression, "
                                           "or {start, end}"))
    return tuple(out)
