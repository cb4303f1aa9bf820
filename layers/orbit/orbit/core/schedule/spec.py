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
from datetime import date, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from orbit.core.definition.durations import DurationError, parse_duration
from orbit.core.schedule.times import format_time, parse_time
from orbit.errors import Problem, ValidationError

MIN_EVERY_MS = 1_000
MAX_JITTER_MS = 24 * 3_600_000
MAX_EXCLUSIONS = 100
# Occurrences a single question may walk over (exclusions can hide many in a row): bounded work
# whatever the spec says; past it the question answers "none found".
MAX_STEPS = 10_000
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Exclusion:
    day: date | None = None
    cron: str | None = None
    start_ms: int | None = None
    end_ms: int | None = None

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
    def next_after(self, after_ms: int) -> int | None:
        """The first occurrence strictly after `after_ms` (ms since the epoch, UTC), or None."""
        floor = after_ms if self.start_ms is None else max(after_ms, self.start_ms - 1)
        for candidate in self._raw_after(floor):
            if self.end_ms is not None and candidate > self.end_ms:
                return None
            if not self.excluded(candidate):
                return candidate
        return None

    def between(self, after_ms: int, until_ms: int, limit: int) -> list[int]:
        """Occurrences in (after_ms, until_ms], oldest first, at most `limit`."""
        out: list[int] = []
        t = after_ms
        while len(out) < limit:
            nxt = self.next_after(t)
            if nxt is None or nxt > until_ms:
                break
            out.append(nxt)
            t = nxt
        return out

    def _raw_after(self, after_ms: int) -> Iterator[int]:
        """Occurrences ignoring start/end/exclusions, at most MAX_STEPS of them."""
        if self.every_ms is not None:
            k = (after_ms - self.offset_ms) // self.every_ms + 1
            for i in range(MAX_STEPS):
                yield self.offset_ms + (k + i) * self.every_ms
            return
        assert self.cron is not None
        # cronsim yields minutes strictly after the given local time, whole minutes only
        start = datetime.fromtimestamp(after_ms // 1000, tz=timezone.utc).astimezone(self.zone)
        it = CronSim(self.cron, start)
        for _ in range(MAX_STEPS):
            try:
                d = next(it)
            except (StopIteration, CronSimError):
                return
            yield int(d.timestamp()) * 1000

    def excluded(self, at_ms: int) -> bool:
        if not self.exclude:
            return False
        local = datetime.fromtimestamp(at_ms / 1000, tz=timezone.utc).astimezone(self.zone)
        for e in self.exclude:
            if e.day is not None and local.date() == e.day:
                return True
            if e.start_ms is not None and e.end_ms is not None and e.start_ms <= at_ms < e.end_ms:
                return True
            if e.cron is not None and _cron_matches(e.cron, local):
                return True
        return False

    def fire_at(self, schedule_id: str, occurrence_ms: int) -> int:
        """When the occurrence is fired: the occurrence plus its jitter (stable per occurrence)."""
        if not self.jitter_ms:
            return occurrence_ms
        digest = hashlib.sha256(f"{schedule_id}\n{occurrence_ms}".encode()).digest()
        return occurrence_ms + int.from_bytes(digest[:8], "big") % (self.jitter_ms + 1)


def _cron_matches(expr: str, local: datetime) -> bool:
    minute = local.replace(second=0, microsecond=0)
    try:
        return bool(next(CronSim(expr, minute - timedelta(minutes=1))) == minute)
    except (StopIteration, CronSimError):
        return False


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
                out.append(Exclusion(cron=expr))
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
