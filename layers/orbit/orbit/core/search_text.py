"""The text of a filter (orbit/core/search.py): its conditions, parsed strictly. Pure.

A hand-written scanner, position by position: no eval, no regular expression over the whole text,
bounded (MAX_TEXT characters, MAX_CONDITIONS conditions, MAX_IN values in an IN). Every problem is
a FilterError naming its 1-based position and what was expected there.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from orbit.core.history.attributes import key_problem, normal, value_problem
from orbit.core.schedule.times import parse_time
from orbit.errors import ValidationError

STATUSES = ("RUNNING", "COMPENSATING", "COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT")
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT")
MAX_TEXT = 4000
MAX_CONDITIONS = 20
MAX_IN = 25
FIELD_OPS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "workflow": ("=", "!=", "IN"), "status": ("=", "!=", "IN"),
             "started": ("<", "<=", ">", ">="), "ended": ("<", "<=", ">", ">="), "id": ("STARTS_WITH",)})
ATTRIBUTE_OPS = ("=", "!=", "<", "<=", ">", ">=", "IN")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_BARE = re.compile(r"[A-Za-z0-9_.:+\-@/]+")
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_WORD_OPS = frozenset({"IN", "STARTS_WITH"})


@dataclass(frozen=True)
class Cond:
    field: str  # workflow | status | started | ended | id | attribute
    op: str
    values: tuple[Any, ...]
    name: str = ""  # the attribute's name
    text: str = ""  # as written, for messages

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Filter:
    conds: tuple[Cond, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.conds)

    def text(self) -> str:
        return " AND ".join(c.text for c in self.conds)


class FilterError(ValidationError):
    def __init__(self, message: str, pos: int | None = None) -> None:
        super().__init__(message if pos is None else f"at {pos + 1}: {message}", "where")


# ------------------------------------------------------------------------------------ parse
def parse(text: Any) -> Filter:
    """The filter `text` spells; FilterError naming the position (1-based) of the first problem."""
    if not isinstance(text, str):
        raise FilterError(f"a filter is text, not {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise FilterError(f"a filter is at most {MAX_TEXT} characters, not {len(text)}")
    bad = next((i for i, c in enumerate(text) if ord(c) < 32 and c not in "\t\n\r"), None)
    if bad is not None:
        raise FilterError(f"control character {text[bad]!r} in the filter", bad)
    p = _Parser(text)
    conds: list[Cond] = []
    while True:
        conds.append(p.condition())
        if len(conds) > MAX_CONDITIONS:
            raise FilterError(f"at most {MAX_CONDITIONS} conditions in a filter")
        p.space()
        if p.at_end():
            break
        word = p.word()
        if word is None or word.upper() != "AND":
            shown = word if word is not None else p.text[p.i]
            if word is not None and word.upper() == "OR":
                raise FilterError("OR is not supported: conditions are joined by AND (run one list per "
                                  "alternative, or use IN)", p.i - len(word))
            raise FilterError(f"expected AND between conditions, found {shown!r}", p.i - len(shown))
    return Filter(tuple(conds))


class _Parser:
    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0

    def at_end(self) -> bool:
        return self.i >= len(self.text)

    def space(self) -> None:
        while not self.at_end() and self.text[self.i].isspace():
            self.i += 1

    def word(self) -> str | None:
        self.space()
        m = _NAME.match(self.text, self.i)
        if not m:
            return None
        self.i = m.end()
        return m.group()

    def found(self) -> str:
        return "the end of the filter" if self.at_end() else repr(self.text[self.i:self.i + 12])

    def condition(self) -> Cond:
        self.space()
        start = self.i
        name = self.word()
        if name is None:
            raise FilterError(f"expected a field or attribute name, found {self.found()}", self.i)
        field, attr = _field(name, start)
        self.space()
        op_at = self.i
        op = self.operator()
        allowed = FIELD_OPS.get(field, ATTRIBUTE_OPS)
        if op not in allowed:
            what = f"attribute {attr!r}" if field == "attribute" else f"`{field}`"
            raise FilterError(f"{what} takes {', '.join(allowed)}, not {op}", op_at)
        self.space()
        value_at = self.i
        if op == "IN":
            values = self.value_list()
        else:
            values = (self.value(),)
        text = self.text[start:self.i].strip()
        return checked(Cond(field, op, values, attr, text), value_at)

    def operator(self) -> str:
        self.space()
        t = self.text
        for op in ("==", "!=", "<>", "<=", ">=", "=", "<", ">"):
            if t.startswith(op, self.i):
                if op == "==":
                    raise FilterError("use = for equality (not ==)", self.i)
                if op == "<>":
                    raise FilterError("use != for inequality (not <>)", self.i)
                self.i += len(op)
                return op
        at = self.i
        word = self.word()
        if word is not None and word.upper() in _WORD_OPS:
            return word.upper()
        raise FilterError(f"expected an operator (=, !=, <, <=, >, >=, IN, STARTS_WITH), found "
                          f"{repr(word) if word else self.found()}", at)

    def value_list(self) -> tuple[Any, ...]:
        self.space()
        if self.at_end() or self.text[self.i] != "(":
            raise FilterError(f"IN takes a list in parentheses, e.g. IN (a, b); found {self.found()}", self.i)
        self.i += 1
        out = [self.value()]
        while True:
            self.space()
            if self.at_end():
                raise FilterError("the IN list is not closed: expected ')'", self.i)
            c = self.text[self.i]
            if c == ")":
                self.i += 1
                break
            if c != ",":
                raise FilterError(f"expected ',' or ')' in the IN list, found {self.found()}", self.i)
            self.i += 1
            out.append(self.value())
            if len(out) > MAX_IN:
                raise FilterError(f"an IN list holds at most {MAX_IN} values", self.i)
        return tuple(out)

    def value(self) -> Any:
        self.space()
        at = self.i
        if self.at_end():
            raise FilterError("expected a value, found the end of the filter", at)
        c = self.text[self.i]
        if c == '"':
            try:
                value, end = json.JSONDecoder().raw_decode(self.text, self.i)
            except ValueError:
                raise FilterError("a \"string\" that is not closed or not valid JSON", at) from None
            self.i = end
            return value
        if c == "'":
            end = self.text.find("'", self.i + 1)
            if end < 0:
                raise FilterError("a 'string' that is not closed", at)
            self.i = end + 1
            return self.text[at + 1:end]
        m = _BARE.match(self.text, self.i)
        if not m:
            raise FilterError(f"expected a value, found {self.found()}", at)
        self.i = m.end()
        raw = m.group()
        if raw in ("true", "false"):
            return raw == "true"
        if _NUMBER.fullmatch(raw):
            number = json.loads(raw)
            if isinstance(number, float) and not math.isfinite(number):
                raise FilterError(f"{raw} is not a finite number", at)
            return normal(number)
        return raw


def _field(name: str, at: int) -> tuple[str, str]:
    if name.startswith("attributes."):
        attr = name[len("attributes."):]
    elif name in FIELD_OPS:
        return name, ""
    else:
        attr = name
    problem = key_problem(attr)
    if problem:
        raise FilterError(problem, at)
    return "attribute", attr


def checked(c: Cond, at: int) -> Cond:
    """The values converted for the field (times to ms, statuses upper-case), or FilterError."""
    values: list[Any] = []
    for v in c.values:
        if c.field in ("workflow", "id"):
            if not isinstance(v, str) or not v:
                raise FilterError(f"{c.field} takes a non-empty string, not {json.dumps(v)}", at)
        elif c.field == "status":
            if not isinstance(v, str) or v.upper() not in STATUSES:
                raise FilterError(f"status is one of {', '.join(STATUSES)}, not {json.dumps(v)}", at)
            v = v.upper()
        elif c.field in ("started", "ended"):
            if isinstance(v, bool) or not isinstance(v, (str, int)):
                raise FilterError(f"{c.field} takes an RFC 3339 time or epoch milliseconds, "
                                  f"not {json.dumps(v)}", at)
            if isinstance(v, str):
                try:
                    v = parse_time(v)
                except ValueError as e:
                    raise FilterError(f"{c.field}: {e}", at) from None
        else:
            problem = value_problem(v)
            if problem:
                raise FilterError(f"attribute {c.name!r}: {problem}", at)
            v = normal(v)
        values.append(v)
    return Cond(c.field, c.op, tuple(values), c.name, c.text)
