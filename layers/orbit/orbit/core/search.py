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
from dataclasses import dataclass
from typing import Any

from orbit.core.history.attributes import index_value, key_problem, normal, value_problem
from orbit.core.search_text import (
    ATTRIBUTE_OPS,
    FIELD_OPS,
    MAX_CONDITIONS,
    STATUSES,
    TERMINAL,
    Cond,
    Filter,
    FilterError,
    checked,
    parse,
)

__all__ = ("ATTRIBUTE_OPS", "FIELD_OPS", "STATUSES", "TERMINAL", "Cond", "Filter", "FilterError", "Plan",
           "from_params", "matches", "parse", "plan", "start_range", "statuses_of")


@dataclass(frozen=True)
class Plan:
    index: str  # gsi1 | gsi2
    partitions: tuple[str, ...]  # the index's partition key values, each one Query
    after_ms: int | None  # created >= after_ms (key condition)
    before_ms: int | None  # created < before_ms (key condition)
    uses: str  # what the key condition is, for `orbit list --explain` and errors
    key: tuple[Cond, ...] = ()  # the conditions the partitions stand for (the rest: checked per row)


# ------------------------------------------------------------------------------------ plan
def plan(flt: Filter) -> Plan:
    """The key condition DynamoDB reads by (docs/operations.md); FilterError if none would do."""
    after, before = start_range(flt)
    by_attr = [c for c in flt.conds if c.field == "attribute" and c.op in ("=", "IN")]
    if by_attr:
        c = min(by_attr, key=lambda c: len(set(map(_key_json, c.values))))
        parts = tuple(dict.fromkeys(index_value(c.name, v) for v in c.values))
        return Plan("gsi1", parts, after, before, f"gsi1 partition(s) {', '.join(parts)}", (c,))
    statuses = statuses_of(flt)
    if statuses is not None:
        parts = tuple(f"ST#{st}" for st in statuses)
        key = tuple(c for c in flt.conds if c.field == "status")
        return Plan("gsi2", parts, after, before, f"gsi2 partition(s) {', '.join(parts)}", key)
    by_wf = [c for c in flt.conds if c.field == "workflow" and c.op in ("=", "IN")]
    if by_wf:
        c = min(by_wf, key=lambda c: len(c.values))
        parts = tuple(dict.fromkeys(f"WF#{v}" for v in c.values))
        return Plan("gsi1", parts, after, before, f"gsi1 partition(s) {', '.join(parts)}", (c,))
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
        extra.append(checked(Cond("status", "=", (status,), "", f"status = {status}"), 0))
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
