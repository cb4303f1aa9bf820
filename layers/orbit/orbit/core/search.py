"""The filter of `orbit list --where` and `orbit batch`: parse (strictly), plan, match. Pure.

    workflow = "orders" AND status IN (RUNNING, FAILED) AND started >= 2026-03-01T00:00:00Z
    AND ended < 2026-03-02T00:00:00Z AND id STARTS_WITH "ord-" AND tier = gold AND amount > 100

Conditions are joined by AND (there is no OR). Fields: `workflow` (=, !=, IN), `status` (=, !=,
IN), `started` / `ended` (<, <=, >, >=: an RFC 3339 time or milliseconds since the epoch), `id`
(STARTS_WITH), and any other name is a search attribute (=, !=, <, <=, >, >=, IN; write
`attributes.status` for an attribute whose name is a field). A value is a "JSON string", a
'quoted string', a number, true/false, or a bare word (letters, digits and `_ . : + - @ /`),
which is the string it spells. An attribute's `!=`, `<` and `>` match only executions that have
the attribute (of a comparable type).

`plan` picks the one key condition DynamoDB can use (docs/operations.md, "Finding executions"):
an attribute `=`/IN (gsi1, one partition per value), else status (gsi2, one per status), else
workflow (gsi1), else a `started` range over every status partition; every other condition is
checked on each row read. A filter with conditions but none of these would read the whole table:
`plan` refuses it, naming the index it lacks.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from orbit.core.history.attributes import index_value, key_problem, normal, value_problem
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


@dataclass(frozen=True)
class Plan:
    index: str  # gsi1 | gsi2
    partitions: tuple[str, ...]  # the index's partition key values, each one Query
    after_ms: int | None  # created >= after_ms (key condition)
    before_ms: int | None  # created < before_ms (key condition)
    uses: str  # what the key condition is, for `orbit list --explain` and errors


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
        return _checked(Cond(field, op, values, attr, text), value_at)

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


def _checked(c: Cond, at: int) -> Cond:
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


# ------------------------------------------------------------------------------------ plan
def plan(flt: Filter) -> Plan:
    """The key condition DynamoDB reads by (docs/operations.md); FilterError if none would do."""
    after, before = start_range(flt)
    by_attr = [c for c in flt.conds if c.field == "attribute" and c.op in ("=", "IN")]
    if by_attr:
        c = min(by_attr, key=lambda c: len(set(map(_key_json, c.values))))
        parts = tuple(dict.fromkeys(index_value(c.name, v) for v in c.values))
        return Plan("gsi1", parts, after, before, f"gsi1 partition(s) {', '.join(parts)}")
    statuses = statuses_of(flt)
    if statuses is not None:
        parts = tuple(f"ST#{st}" for st in statuses)
        return Plan("gsi2", parts, after, before, f"gsi2 partition(s) {', '.join(parts)}")
    by_wf = [c for c in flt.conds if c.field == "workflow" and c.op in ("=", "IN")]
    if by_wf:
        c = min(by_wf, key=lambda c: len(c.values))
        parts = tuple(dict.fromkeys(f"WF#{v}" for v in c.values))
        return Plan("gsi1", parts, after, before, f"gsi1 partition(s) {', '.join(parts)}")
    residual = [c for c in flt.conds if c.field != "started"]
    if residual and after is None and before is None:
        raise FilterError(_refusal(residual[0]))
    ended = any(c.field == "ended" for c in flt.conds)
    parts = tuple(f"ST#{st}" for st in (TERMINAL if ended else STATUSES))
    range_text = "" if after is None and before is None else ", the started range on their sort key"
    return Plan("gsi2", parts, after, before, f"every gsi2 status partition{range_text}")


def _refusal(c: Cond) -> str:
    lacks = {"workflow": "by workflows other than one (gsi1 is keyed by one workflow)",
             "ended": "by end time (gsi1 and gsi2 are sorted by start time)",
             "id": "by id prefix (the table is keyed by the exact id)"}.get(
        c.field, f"by ranges or exclusions of attribute {c.name!r} (gsi1 holds {c.name} = value partitions)")
    return (f"`{c.text}` alone would read the whole table: there is no index {lacks}; add workflow =, "
            "status =, an attribute = or IN, or a started range")


def statuses_of(flt: Filter) -> tuple[str, ...] | None:
    """The statuses the status conditions allow, in STATUSES order; None without any."""
    allowed: set[str] | None = None
    for c in flt.conds:
        if c.field != "status":
            continue
        these = set(STATUSES) - set(c.values) if c.op == "!=" else set(c.values)
        allowed = these if allowed is None else allowed & these
    return None if allowed is None else tuple(s for s in STATUSES if s in allowed)


def start_range(flt: Filter) -> tuple[int | None, int | None]:
    """(after, before): started >= after and started < before, in ms, from every `started` condition."""
    after: int | None = None
    before: int | None = None
    for c in flt.conds:
        if c.field != "started":
            continue
        v = int(c.values[0])
        lo = {">": v + 1, ">=": v}.get(c.op)
        hi = {"<": v, "<=": v + 1}.get(c.op)
        if lo is not None:
            after = lo if after is None else max(after, lo)
        if hi is not None:
            before = hi if before is None else min(before, hi)
    return after, before


def _key_json(v: Any) -> str:
    return json.dumps(v)


# ------------------------------------------------------------------------------------ match
def matches(flt: Filter, workflow: str, status: str, created_ms: int, updated_ms: int, execution_id: str,
            attributes: dict[str, Any] | None) -> bool:
    """Whether an execution (its index row's fields) meets every condition."""
    return all(_holds(c, workflow, status, created_ms, updated_ms, execution_id, attributes or {})
               for c in flt.conds)


def _holds(c: Cond, workflow: str, status: str, created: int, updated: int, eid: str,
           attrs: dict[str, Any]) -> bool:
    if c.field == "workflow":
        return (workflow in c.values) != (c.op == "!=")
    if c.field == "status":
        return (status in c.values) != (c.op == "!=")
    if c.field == "id":
        return eid.startswith(c.values[0])
    if c.field in ("started", "ended"):
        if c.field == "ended" and status not in TERMINAL:
            return False
        return _compare(created if c.field == "started" else updated, c.op, c.values[0])
    if c.name not in attrs:
        return False
    have = normal(attrs[c.name])
    if c.op in ("=", "IN"):
        return any(_same(have, v) for v in c.values)
    if c.op == "!=":
        return not _same(have, c.values[0])
    want = c.values[0]
    if _number(have) and _number(want):
        return _compare(have, c.op, want)
    if isinstance(have, str) and isinstance(want, str):
        return _compare(have, c.op, want)
    return False


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _compare(a: Any, op: str, b: Any) -> bool:
    return bool({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])


def from_params(where: Any = None, workflow: str | None = None, status: str | None = None,
                started_after_ms: int | None = None, started_before_ms: int | None = None,
                id_prefix: str | None = None) -> Filter:
    """The list's separate parameters and its `where` text as one filter."""
    flt = parse(where) if isinstance(where, str) else Filter()
    extra: list[Cond] = []
    if isinstance(where, dict):
        for key, value in where.items():
            problem = key_problem(key) or value_problem(value)
            if problem:
                raise FilterError(problem)
            extra.append(Cond("attribute", "=", (normal(value),), key, f"{key} = {json.dumps(value)}"))
    if workflow:
        extra.append(Cond("workflow", "=", (workflow,), "", f"workflow = {json.dumps(workflow)}"))
    if status:
        extra.append(_checked(Cond("status", "=", (status,), "", f"status = {status}"), 0))
    if started_after_ms is not None:
        extra.append(Cond("started", ">=", (started_after_ms,), "", f"started >= {started_after_ms}"))
    if started_before_ms is not None:
        extra.append(Cond("started", "<", (started_before_ms,), "", f"started < {started_before_ms}"))
    if id_prefix:
        extra.append(Cond("id", "STARTS_WITH", (id_prefix,), "", f"id STARTS_WITH {json.dumps(id_prefix)}"))
    conds = flt.conds + tuple(extra)
    if len(conds) > MAX_CONDITIONS:
        raise FilterError(f"at most {MAX_CONDITIONS} conditions in a filter")
    return Filter(conds)
