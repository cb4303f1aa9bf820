"""`list_executions` under a filter (orbit/core/search.py): the plan's key condition, then the rest.

Each partition of the plan is one Query, newest first, with the start-time range in its key
condition. On gsi2 (by status; its rows carry everything) the workflow and id-prefix conditions
and the end-time range are a FilterExpression: DynamoDB reads each row of the key range (and
charges for it) and returns only those that pass. On gsi1 (by workflow or by attribute value;
its rows carry only `fixed`) the id prefix is a FilterExpression and the rows that pass are read
with BatchGetItem for their status and attributes. Every condition is then checked again by
`core.search.matches` on the row (attribute ranges and exclusions are checked only there: `attrs`
is one JSON string). A partition reads at most SCAN_BUDGET rows per call; a call may return a
short page, even an empty one, with a cursor to carry on from.
"""

from __future__ import annotations

import json
from typing import Any

from orbit.adapters.dynamodb.codec import s
from orbit.core.search import Filter, Plan, matches, plan

SCAN_BUDGET = 2000


def search(store: Any, flt: Filter, limit: int,
           before: str | None) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
    """(index rows of the page, newest first; the sort key to carry on below, or None)."""
    p = plan(flt)
    if p.before_ms is not None:
        upper = f"{max(0, p.before_ms):015d}"
        before = upper if before is None else min(before, upper)
    after = None if p.after_ms is None else f"{max(0, p.after_ms):015d}"
    found: list[tuple[str, dict[str, Any]]] = []
    floor = ""
    for pk in p.partitions:
        rows, cut_at = _partition(store, p, pk, flt, before, after, limit + 1)
        found += rows
        floor = max(floor, cut_at or "")
    found = sorted((f for f in found if f[0] > floor), key=lambda pair: pair[0], reverse=True)
    page = found[:limit]
    if len(found) > limit and page:
        return page, found[limit - 1][0]
    return page, floor or None


def _partition(store: Any, p: Plan, pk: str, flt: Filter, before: str | None, after: str | None,
               want: int) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
    pk_name, sk_name = f"{p.index}pk", f"{p.index}sk"
    values: dict[str, Any] = {":pk": s(pk)}
    if before and after:
        if after >= before:
            return [], None
        cond = f"{pk_name} = :pk AND {sk_name} BETWEEN :after AND :before"
        values[":before"], values[":after"] = s(before), s(after)
    elif before:
        cond, values[":before"] = f"{pk_name} = :pk AND {sk_name} < :before", s(before)
    elif after:
        cond, values[":after"] = f"{pk_name} = :pk AND {sk_name} >= :after", s(after)
    else:
        cond = f"{pk_name} = :pk"
    filters, names = _filter_expression(flt, p.index, values)
    kw: dict[str, Any] = {"TableName": store.table, "IndexName": p.index, "ScanIndexForward": False,
                          "KeyConditionExpression": cond, "ExpressionAttributeValues": values,
                          "Limit": max(want, 10)}
    if filters:
        kw["FilterExpression"] = filters
    if names:
        kw["ExpressionAttributeNames"] = names
    out: list[tuple[str, dict[str, Any]]] = []
    read = 0
    while len(out) < want:
        got = store._db.query(**kw)
        items = [(i[sk_name]["S"], i) for i in got["Items"] if before is None or i[sk_name]["S"] < before]
        if p.index == "gsi1":  # only `fixed` here: the index rows themselves, for status and attributes
            items = store._with_status([(o, {**i, "sk": s("A#INDEX")}) for o, i in items])
        out += [(o, i) for o, i in items if _match(flt, i)]
        read += got.get("ScannedCount", len(got["Items"]))
        last = got.get("LastEvaluatedKey")
        if last is None:
            break
        if read >= SCAN_BUDGET and len(out) < want:
            return out, last[sk_name]["S"]
        kw["ExclusiveStartKey"] = last
    if len(out) > want:  # the last page read past `want`: carry on from the last row kept
        return out[:want], None
    return out, None


def _filter_expression(flt: Filter, index: str, values: dict[str, Any]) -> tuple[str, dict[str, str]]:
    parts: list[str] = []
    names: dict[str, str] = {}
    for n, c in enumerate(flt.conds):
        if c.field == "id":
            values[f":f{n}"] = s(f"EXEC#{c.values[0]}")
            parts.append(f"begins_with(pk, :f{n})")
        elif index != "gsi2":
            continue
        elif c.field == "workflow":
            keys = []
            for k, v in enumerate(c.values):
                values[f":f{n}_{k}"] = s(f"WF#{v}")
                keys.append(f":f{n}_{k}")
            test = f"gsi1pk IN ({', '.join(keys)})"
            parts.append(f"NOT ({test})" if c.op == "!=" else test)
        elif c.field == "ended":
            values[f":f{n}"] = {"N": str(int(c.values[0]))}
            names["#upd"] = "updated"
            parts.append(f"#upd {c.op} :f{n}")
    return " AND ".join(parts), names


def _match(flt: Filter, row: dict[str, Any]) -> bool:
    fixed = json.loads(row["fixed"]["S"])
    attrs = json.loads(row["attrs"]["S"]) if "attrs" in row else None
    return matches(flt, fixed["workflow"], row["status"]["S"], int(fixed["created_at_ms"]),
                   int(row["updated"]["N"]), fixed["execution_id"], attrs)
