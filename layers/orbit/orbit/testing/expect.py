"""Comparing what a test expected with what happened, and showing the difference as a diff."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

_MISSING = object()


@dataclass(frozen=True)
class Mismatch:
    path: str  # where in the test file, e.g. expect.steps.charge.status
    message: str
    expected: Any = _MISSING
    actual: Any = _MISSING
    step: str = ""

    def lines(self) -> list[str]:
        """The mismatch for a person: a headline, then `- expected` / `+ actual` lines."""
        head = f"{self.path}: {self.message}"
        if self.expected is _MISSING:
            return [head]
        return [head, *diff(self.expected, self.actual)]


def _dump(value: Any) -> list[str]:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str).splitlines()


def diff(expected: Any, actual: Any) -> list[str]:
    exp, act = _dump(expected), _dump(actual)
    if len(exp) == 1 and len(act) == 1:
        return [f"  - {exp[0]}", f"  + {act[0]}"]
    lines = difflib.unified_diff(exp, act, "expected", "actual", lineterm="", n=2)
    return [f"  {line}" for line in lines]


def _where(path: str, step: str) -> str:
    return f"step {step}: " if step else ""


def compare(path: str, expected: Any, actual: Any, step: str = "") -> list[Mismatch]:
    if _equal(expected, actual):
        return []
    message = f"{_where(path, step)}expected (-) differs from actual (+)"
    return [Mismatch(path, message, expected, actual, step)]


def _equal(a: Any, b: Any) -> bool:
    # JSON equality: 1 == 1.0, but true is not 1
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def contains(expected: Any, actual: Any) -> bool:
    """Partial match: every key of an expected mapping is in the actual one and matches it (at any
    depth); lists match element by element and have the same length; anything else is equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and contains(v, actual[k])
                                                for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(
            contains(e, a) for e, a in zip(expected, actual))
    return _equal(expected, actual)


def includes(path: str, expected: Any, actual: Any, step: str = "") -> list[Mismatch]:
    if contains(expected, actual):
        return []
    shown = _trim(expected, actual)
    return [Mismatch(path, f"{_where(path, step)}the actual value (+) does not include the expected one (-)",
                     expected, shown, step)]


def _trim(expected: Any, actual: Any) -> Any:
    """The actual value cut down to the keys the expectation names, so the diff shows only them."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return {k: _trim(expected[k], actual[k]) for k in expected if k in actual}
    return actual


def subsequence(path: str, expected: list[Any], history: list[dict[str, Any]]) -> list[Mismatch]:
    """Each expected event (a type, or a partial event) matches a later event than the one before."""
    i = 0
    for n, want in enumerate(expected):
        pattern = {"type": want} if isinstance(want, str) else want
        while i < len(history) and not contains(pattern, history[i]):
            i += 1
        if i == len(history):
            types = [e["type"] if not e.get("step") else f"{e['type']} {e['step']}" for e in history]
            return [Mismatch(f"{path}[{n}]", f"no {json.dumps(want)} after the events matched before it "
                             "(the history's events are +)", expected[n:], types)]
        i += 1
    return []
