"""What a value must be for history to store it, and which ids callers may choose.

Pure: used by the API (a request that breaks these rules is a 400, nothing is
recorded) and by the decider (a value an execution produced that breaks them
fails that step or the execution with `VALUE_NOT_STORABLE`; it never reaches a
commit that every later decision would fail on).

A storable value is JSON data (dict with string keys, list, str, int, float,
bool, None), with finite floats, strings that encode to UTF-8 (no lone
surrogates such as "\\ud800") and at most `MAX_DEPTH` nested containers.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from orbit.core.history.task_error import TaskError
from orbit.errors import Problem

MAX_DEPTH = 64
"""Nested objects/arrays a value may have; deeper JSON is refused (no recursion limit reached anywhere)."""

MAX_ID_LENGTH = 200
RESERVED_ID_CHARS = "/~"
"""Characters only the engine puts in execution ids: `PARENT/STEP` names a child, `ID~N` a continuation."""

VALUE_NOT_STORABLE = "VALUE_NOT_STORABLE"

SCHEDULE_ID_PREFIX = "schedule:"
"""The id a schedule's runs report their end to (orbit/core/schedule/state.py PARENT_PREFIX)."""
# A schedule's run is `<schedule id>:<occurrence>` (orbit/core/schedule/state.py execution_id, with
# the occurrence as orbit/core/schedule/times.py format_time spells it).
_OCCURRENCE = re.compile(r":[0-9]{1,6}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z\Z")

_ID_CHARS = re.compile(r"[A-Za-z0-9._:@+=,;!$*()'\[\]-]+")


def value_problem(value: Any, where: str) -> Problem | None:
    """None when `value` is storable; otherwise the first bad place (`where[2].name`) and what is wrong."""
    # Fast path (the C encoder checks types, NaN and UTF-8 in one pass; then only containers are
    # walked for depth); the path-naming walk below runs only for a value that has a problem.
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError, RecursionError):
        return _first_problem(value, where) or Problem(where, "is not JSON data")
    if _deeper_than(value, MAX_DEPTH):
        return _first_problem(value, where)
    return None


class NotStorable(TaskError):
    """A value produced by user code (a task's result, a workflow's output, a query's answer) that
    history cannot store: code VALUE_NOT_STORABLE, not retryable (the same code returns the same
    value), the message naming the path and what is wrong (`output.items[2].when: datetime is not
    JSON data`)."""

    def __init__(self, problem: Problem | str, prefix: str = "") -> None:
        super().__init__(VALUE_NOT_STORABLE, f"{prefix}{problem}", retryable=False)


def not_storable(value: Any, where: str, prefix: str = "") -> NotStorable | None:
    """The failure `value` becomes when history cannot store it (see NotStorable), else None."""
    problem = value_problem(value, where)
    return None if problem is None else NotStorable(problem, prefix)


def _deeper_than(value: Any, limit: int) -> bool:
    containers = (dict, list)
    level = [value] if isinstance(value, containers) else []
    depth = 0
    while level:  # one level at a time, containers only: scalars cost a type check each
        if depth >= limit:
            return True
        below: list[Any] = []
        for v in level:
            below += [x for x in (v.values() if isinstance(v, dict) else v) if isinstance(x, containers)]
        level, depth = below, depth + 1
    return False


def _first_problem(value: Any, where: str) -> Problem | None:
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        v, path, depth = stack.pop()
        if v is None or isinstance(v, (bool, int)):
            continue
        if isinstance(v, str):
            if not v.isascii():
                problem = _text_problem(v)
                if problem:
                    return Problem(path, f"{problem}")
            continue
        if isinstance(v, float):
            if not math.isfinite(v):
                return Problem(path, f"{v} is not a JSON number")
            continue
        if isinstance(v, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                return Problem(path, f"nested more than {MAX_DEPTH} levels deep")
            if isinstance(v, (list, tuple)):  # the encoder writes a tuple as a list
                stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(v))
                continue
            for k, item in v.items():
                if not isinstance(k, str):
                    return Problem(path, f"object keys must be strings, not {type(k).__name__}")
                if not k.isascii() and _text_problem(k):
                    return Problem(path, f"a key {_text_problem(k)}")
                stack.append((item, f"{path}.{k}", depth + 1))
            continue
        return Problem(path, f"{type(v).__name__} is not JSON data")
    return None


def _text_problem(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"has a lone surrogate {text[e.start]!r} at character {e.start}, which UTF-8 cannot store"
    return None


def execution_id_problem(value: Any) -> str | None:
    """None when a caller may create an execution with id `value`: THE rule for every id a caller
    chooses (start, fork; the API, the CLI, LocalStack and the simulator all come here).

    Ids the engine derives are outside what it allows, so no caller can take one before the
    engine does (issue 25): a child is `PARENT/STEP`, a continuation `ID~N`, a schedule's
    occurrence `SCHEDULE:<RFC 3339 UTC time>` and the schedule itself reports as `schedule:SCHEDULE`.
    tests/unit/test_execution_ids.py holds every derivation against this rule."""
    problem = _id_problem(value)
    if problem is not None:
        return problem
    if any(c in value for c in RESERVED_ID_CHARS):
        return (f"must not contain {' or '.join(repr(c) for c in RESERVED_ID_CHARS)}: the engine reserves "
                "them for child executions (PARENT/STEP) and continuations (ID~N)")
    if value.startswith(SCHEDULE_ID_PREFIX):
        return f"must not start with {SCHEDULE_ID_PREFIX!r}: it is reserved for schedules"
    if _OCCURRENCE.search(value):
        return ("must not end with ':' and an RFC 3339 UTC time (such as :2026-03-30T07:00:00Z): the engine "
                "reserves that shape for the runs of schedules (SCHEDULE:OCCURRENCE)")
    return None


def signal_id_problem(value: Any) -> str | None:
    """None when a caller may name a signal `value` (its idempotency id)."""
    return _id_problem(value)


def _id_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return "must be a non-empty string, or left out to have one generated"
    if len(value) > MAX_ID_LENGTH:
        return f"must be at most {MAX_ID_LENGTH} characters, not {len(value)}"
    if not _ID_CHARS.fullmatch(value.replace("/", "a").replace("~", "a")):
        bad = next(c for c in value if c not in "/~" and not _ID_CHARS.fullmatch(c))
        return f"must use letters, digits and . _ - : @ + = , ; ! $ * ( ) ' [ ] only, not {bad!r}"
    return None
