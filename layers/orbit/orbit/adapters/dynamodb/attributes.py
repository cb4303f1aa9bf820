"""Search attributes on the Orbit table: one row per attribute, found through gsi1, expiring with
the execution.

    EXEC#<id> / A#Q#<name> gsi1 (AT#<name>=<json value>, created#id), `fixed` as the index row's

Why rows in the execution's partition and gsi1, not a new index: gsi1 already sorts by
`created#id` and projects only `fixed`, so `--where tier=gold` is one key-condition query on the
partition `AT#tier="gold"` (newest first, a start-time range is part of the key condition), then
one BatchGetItem of the matching index rows for their status. No table or template change, and
the rows live in `EXEC#<id>`, so `retire` gives them the execution's expiry with everything else.

Cost: a row is written only when its value changed (the index row keeps `attrs`, read first with
one consistent GetItem): 2 WRU (item + gsi1) per attribute set, 3 when a value changes (the gsi1
key moves). An execution that sets none pays nothing. `benchmarks/bench_cost.py` prints it.
Crash safety: the attribute rows are written before the index row, each conditional on `updated`
like the index row, so a redelivery (which writes the index again) finds the old `attrs` and
writes what is missing; an older update never replaces a newer one.
"""

from __future__ import annotations

import json
from typing import Any

from orbit.adapters.dynamodb.codec import ConditionFailed, expiry_attrs, n, put_if, s
from orbit.core.history.attributes import changed, index_value
from orbit.errors import ValidationError
from orbit.service.ports import IndexEntry

ATTRIBUTE_SK = "A#Q#"  # beside A#INDEX, below C#: outside every commit range (C#..SNAP, C#..C#~)


class AttributeRows:
    """Mixin of IndexRows: the attribute rows of `put_index`, and `list_executions(where=...)`."""

    _db: Any
    table: str

    def _put_attributes(self, entry: IndexEntry, pk: dict[str, str], order: str, fixed: str,
                        expires_at_s: int | None, provisional: bool = False) -> None:
        if not entry.attributes:
            return
        row = self._db.get_item(TableName=self.table, ConsistentRead=True, Key={"pk": pk, "sk": s("A#INDEX")},
                                ProjectionExpression="attrs").get("Item") or {}
        old = json.loads(row["attrs"]["S"]) if "attrs" in row else {}
        for key, value in changed(entry.attributes, old).items():
            item = {"pk": pk, "sk": s(ATTRIBUTE_SK + key), "gsi1pk": s(index_value(key, value)),
                    "gsi1sk": s(order), "fixed": s(fixed), "updated": n(entry.updated_at_ms)}
            item.update(expiry_attrs(expires_at_s, provisional))
            try:
                put_if(self._db, self.table, item, "attribute_not_exists(pk) OR updated <= :u",
                       ExpressionAttributeValues={":u": n(entry.updated_at_ms)})
            except ConditionFailed:
                pass  # a newer update wrote it

    def _list_where(self, where: dict[str, Any], workflow: str | None, status: str | None, limit: int,
                    before: str | None, after: str | None,
                    id_prefix: str | None) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
        """(rows of the page, the next sort key): one condition, newest first; workflow and status
        are checked on the index rows read for the page (a page may be short, with a cursor)."""
        if len(where) != 1:
            raise ValidationError("one search attribute condition per list (name=value)", "where")
        ((key, value),) = where.items()
        rows, cut_at = self._query_index("gsi1", "gsi1pk", index_value(key, value), "gsi1sk",  # type: ignore[attr-defined]
                                         before, after, limit + 1, None, id_prefix)
        page = [(order, {**i, "sk": s("A#INDEX")}) for order, i in rows[:limit]]
        full = self._with_status(page)  # type: ignore[attr-defined]
        kept = [(o, r) for o, r in full if (status is None or r["status"]["S"] == status)
                and (workflow is None or json.loads(r["fixed"]["S"])["workflow"] == workflow)]
        if len(rows) > limit and page:
            return kept, page[-1][0]
        return kept, cut_at


def attributes_of(row: dict[str, Any]) -> dict[str, Any] | None:
    return json.loads(row["attrs"]["S"]) if "attrs" in row else None
