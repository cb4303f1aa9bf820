"""A schedule's configuration: what it starts, its spec and its policies (parsed from caller input)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from orbit.core.definition.durations import DurationError, parse_duration
from orbit.core.schedule.spec import Spec, parse_spec
from orbit.errors import Problem, ValidationError

OVERLAPS = ("skip", "buffer_one", "buffer_all", "cancel_other", "allow_all")
DEFAULT_CATCHUP_MS = 3_600_000
MAX_CATCHUP_MS = 365 * 86_400_000
MAX_INPUT_BYTES = 64 * 1024
# An id becomes part of execution ids (`<id>:<time>`), table keys and an AWS schedule name.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass(frozen=True)
class Config:
    schedule_id: str
    workflow: str
    version: str | None
    input: Any
    spec: Spec
    overlap: str = "skip"
    catchup_window_ms: int = DEFAULT_CATCHUP_MS
    pause_on_failure: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.schedule_id,
            "workflow": self.workflow,
            "version": self.version,
            "input": self.input,
            "spec": self.spec.to_dict(),
            "overlap": self.overlap,
            "catchup_window_ms": self.catchup_window_ms,
            "pause_on_failure": self.pause_on_failure,
        }


def check_schedule_id(value: Any) -> str:
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise ValidationError(
            "must be 1-100 characters of letters, digits, '.', '_' or '-', starting with a letter or digit",
            "id",
        )
    return value


def check_overlap(value: Any, path: str = "overlap") -> str:
    if value not in OVERLAPS:
        raise ValidationError(f"must be one of {', '.join(OVERLAPS)}, not {value!r}", path)
    return str(value)


def parse_config(raw: Any) -> Config:
    """A Config from a create/update request; ValidationError naming each bad field."""
    if not isinstance(raw, dict):
        raise ValidationError("a schedule must be an object", "")
    problems: list[Problem] = []
    known = {"id", "workflow", "version", "input", "spec", "cron", "every", "offset", "timezone", "start",
             "end", "jitter", "exclude", "overlap", "catchup_window", "catchup_window_ms", "pause_on_failure"}
    problems += [Problem(k, "unknown field") for k in raw if k not in known]
    sid = _collect(problems, lambda: check_schedule_id(raw.get("id")))
    workflow = raw.get("workflow")
    if not isinstance(workflow, str) or not workflow:
        problems.append(Problem("workflow", "is required (a registered workflow name)"))
    version = raw.get("version")
    if version is not None and not isinstance(version, (str, int)):
        problems.append(Problem("version", "must be a string, or left out for the latest"))
    try:
        size = len(json.dumps(raw.get("input"), allow_nan=False))
        if size > MAX_INPUT_BYTES:
            problems.append(Problem("input", f"is {size} bytes; at most {MAX_INPUT_BYTES}"))
    except (TypeError, ValueError) as e:
        problems.append(Problem("input", f"must be JSON data: {e}"))
    # the spec may be given nested (`spec: {...}`) or flat (`cron: ...`, `timezone: ...`)
    flat = {k: raw[k] for k in ("cron", "every", "offset", "timezone", "start", "end", "jitter", "exclude")
            if raw.get(k) is not None}
    spec_raw = raw.get("spec") if raw.get("spec") is not None else flat
    spec = _collect(problems, lambda: parse_spec(spec_raw, "spec" if raw.get("spec") is not None else ""))
    overlap = _collect(problems, lambda: check_overlap(raw.get("overlap") or "skip"))
    catchup = raw.get("catchup_window", raw.get("catchup_window_ms"))
    catchup_ms = DEFAULT_CATCHUP_MS
    if catchup is not None:
        try:
            catchup_ms = parse_duration(catchup)
            if catchup_ms > MAX_CATCHUP_MS:
                problems.append(Problem("catchup_window", "must be at most 365d"))
        except (DurationError, TypeError, ValueError) as e:
            problems.append(Problem("catchup_window", str(e)))
    pof = raw.get("pause_on_failure", False)
    if not isinstance(pof, bool):
        problems.append(Problem("pause_on_failure", "must be true or false"))
    if problems:
        raise ValidationError(problems)
    return Config(sid, str(workflow), None if version is None else str(version), raw.get("input"), spec,
                  overlap, catchup_ms, pof)


def _collect(problems: list[Problem], fn: Any) -> Any:
    try:
        return fn()
    except ValidationError as e:
        problems.extend(e.problems)
        return None
