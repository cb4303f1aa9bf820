"""The execution index on the Orbit table: one row per execution, listed and counted by two GSIs.

    EXEC#<id> / A#INDEX    gsi1 (WF#<workflow>, created#id) projects `fixed` only
                           gsi2 (ST#<status>,   created#id) projects everything
    EXEC#<id> / A#Q#<name> gsi1 (AT#<name>=<value>, created#id): search attributes (attributes.py)

Listing is newest first on the `created#id` sort key, so a start-time range is a key condition
(cheap) and the cursor is the last sort key returned. An id prefix is a filter: DynamoDB reads
the rows and drops the others, so each call reads at most `SCAN_BUDGET` rows per partition and
may return a short (even empty) page with a cursor to carry on from.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from orbit.adapters.dynamodb.attributes import AttributeRows, attributes_of
from orbit.adapters.dynamodb.codec import ConditionFailed, expiry_attrs, n, num, put_if, s
from orbit.adapters.dynamodb.search import search
from orbit.core.search import Filter
from orbit.errors import ValidationError
from orbit.service.ports import COUNT_CAP, IndexEntry

INDEX = "A#INDEX"
STATUSES = ("RUNNING", "COMPENSATING", "COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT")
SCAN_BUDGET = 2000  # rows one list call may read per partition when a filter drops rows


def exec_pk(execution_id: str) -> dict[str, str]:
    return s(f"EXEC#{execution_id}")


class IndexRows(AttributeRows):
    """Mixin of DynamoHistoryStore: `put_index`, `list_executions`, `count_executions`."""

    _db: Any
    table: str

    def put_index(self, entry: IndexEntry, expires_at_s: int | None = None,
                  provisional: bool = False) -> None:
        """Write the execution's index row (the service calls it only when the status changes).

        Cost, why it is shaped this way: a row write is 1 WRU plus one per GSI it touches, and a GSI
        key change is a delete + a put (2). gsi1 (by workflow) projects only `fixed`, the part that
        never changes, so a status change does not touch it; gsi2 (by status) changes key anyway.
        Start 3 WRU + each status change 3 WRU (with gsi1 projecting ALL it was 4).
        """
        order = f"{entry.created_at_ms:015d}#{entry.execution_id}"
        fixed = {"execution_id": entry.execution_id, "workflow": entry.workflow, "version": entry.version,
                 "created_at_ms": entry.created_at_ms, "parent_id": entry.parent_id}
        item = {"pk": exec_pk(entry.execution_id), "sk": s(INDEX),
                "gsi1pk": s(f"WF#{entry.workflow}"), "gsi1sk": s(order),
                "gsi2pk": s(f"ST#{entry.status}"), "gsi2sk": s(order),
                "status": s(entry.status), "updated": n(entry.updated_at_ms),
                "fixed": s(json.dumps(fixed, separators=(",", ":")))}
        if entry.attributes:
            item["attrs"] = s(json.dumps(entry.attributes, separators=(",", ":"), ensure_ascii=False))
        item.update(expiry_attrs(expires_at_s, provisional))
        # before the row
        self._put_attributes(entry, item["pk"], order, item["fixed"]["S"], expires_at_s, provisional)
        # Updates may arrive out of order (two deciders, redeliveries): the newest one wins.
        try:
            put_if(self._db, self.table, item, "attribute_not_exists(pk) OR updated <= :u",
                   ExpressionAttributeValues={":u": n(entry.updated_at_ms)})
        except ConditionFailed:
            pass

    def list_executions(self, workflow: str | None = None, status: str | None = None, limit: int = 50,
                        cursor: str | None = None, started_after_ms: int | None = None,
                        started_before_ms: int | None = None,
                        id_prefix: str | None = None,
                        where: dict[str, Any] | None = None) -> tuple[list[IndexEntry], str | None]:
        """Newest first. The cursor is the index sort key (created#id) below which to carry on.

        By status (with or without a workflow): gsi2, whose rows carry everything. By workflow alone:
        gsi1 gives the ids in order, then one BatchGetItem reads their current status. No filter:
        the status partitions merged (no single hot "all" partition).
        """
        before = _decode_cursor(cursor)
        if started_before_ms is not None:
            upper = f"{max(0, started_before_ms):015d}"  # "<created>#id" < "<before>" iff created < before
            before = upper if before is None else min(before, upper)
        after = None if started_after_ms is None else f"{max(0, started_after_ms):015d}"
        if where:  # search attributes (adapters/dynamodb/attributes.py)
            rows, next_at = self._list_where(where, workflow, status, limit, before, after, id_prefix)
            return [_entry(i) for _, i in rows], (_encode_cursor(next_at) if next_at else None)
        if status is not None:
            parts = [("gsi2", "gsi2pk", f"ST#{status}", "gsi2sk")]
        elif workflow is not None:
            parts = [("gsi1", "gsi1pk", f"WF#{workflow}", "gsi1sk")]
        else:
            parts = [("gsi2", "gsi2pk", f"ST#{st}", "gsi2sk") for st in STATUSES]
        found: list[tuple[str, dict[str, Any]]] = []
        floor = ""  # a partition cut short by the budget was read down to here, no further
        for index, pk_name, pk_value, sk_name in parts:
            rows, cut_at = self._query_index(index, pk_name, pk_value, sk_name, before, after, limit + 1,
                                             workflow if status is not None else None, id_prefix)
            found += rows
            floor = max(floor, cut_at or "")
        found = sorted((f for f in found if f[0] > floor), key=lambda pair: pair[0], reverse=True)
        page = found[:limit]
        if status is None and workflow is not None:
            page = self._with_status(page)
        if len(found) > limit and page:
            next_key: str | None = found[limit - 1][0]
        else:
            next_key = floor or None  # the budget ran out: carry on below what was read
        return [_entry(i) for _, i in page], (_encode_cursor(next_key) if next_key else None)

    def _query_index(self, index: str, pk_name: str, pk_value: str, sk_name: str, before: str | None,
                     after: str | None, want: int, workflow: str | None,
                     id_prefix: str | None) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
        """Up to `want` matching rows, newest first, and the sort key it stopped at if the scan
        budget ran out first (None when it found `want` rows or read the partition to its end)."""
        values: dict[str, Any] = {":pk": s(pk_value)}
        if before and after:
            cond = f"{pk_name} = :pk AND {sk_name} BETWEEN :after AND :before"
            values[":before"], values[":after"] = s(before), s(after)  # inclusive: `before` dropped below
        elif before:
            cond = f"{pk_name} = :pk AND {sk_name} < :before"
            values[":before"] = s(before)
        elif after:
            cond = f"{pk_name} = :pk AND {sk_name} >= :after"
            values[":after"] = s(after)
        else:
            cond = f"{pk_name} = :pk"
        filters = []
        if workflow is not None:
            filters.append("gsi1pk = :wf")
            values[":wf"] = s(f"WF#{workflow}")
        if id_prefix:
            filters.append("begins_with(pk, :idp)")
            values[":idp"] = s(f"EXEC#{id_prefix}")
        kw: dict[str, Any] = {"TableName": self.table, "IndexName": index, "ScanIndexForward": False,
                              "KeyConditionExpression": cond, "ExpressionAttributeValues": values,
                              "Limit": max(want, 10)}
        if filters:
            kw["FilterExpression"] = " AND ".join(filters)
        out: list[tuple[str, dict[str, Any]]] = []
        read = 0
        while len(out) < want:
            page = self._db.query(**kw)
            out += [(i[sk_name]["S"], i) for i in page["Items"] if before is None or i[sk_name]["S"] < before]
            read += page.get("ScannedCount", len(page["Items"]))
            last = page.get("LastEvaluatedKey")
            if last is None:
                break
            if read >= SCAN_BUDGET and len(out) < want:
                return out, last[sk_name]["S"]
            kw["ExclusiveStartKey"] = last
        return out[:want], None

    def search_executions(self, flt: Filter, limit: int = 50,
                          cursor: str | None = None) -> tuple[list[IndexEntry], str | None]:
        """Under a filter (orbit/core/search.py; how it reads: adapters/dynamodb/search.py)."""
        rows, next_key = search(self, flt, limit, _decode_cursor(cursor))
        return [_entry(i) for _, i in rows], (_encode_cursor(next_key) if next_key else None)

    def count_executions(self, workflow: str | None = None, cap: int = COUNT_CAP) -> dict[str, int]:
        """Per status, a COUNT query on gsi2 that stops at `cap` rows (it reads each row it counts)."""
        counts: dict[str, int] = {}
        for status in STATUSES:
            kw: dict[str, Any] = {"TableName": self.table, "IndexName": "gsi2", "Select": "COUNT",
                                  "KeyConditionExpression": "gsi2pk = :pk",
                                  "ExpressionAttributeValues": {":pk": s(f"ST#{status}")}}
            if workflow is not None:
                kw["FilterExpression"] = "gsi1pk = :wf"
                kw["ExpressionAttributeValues"][":wf"] = s(f"WF#{workflow}")
            total = read = 0
            while read < cap:
                kw["Limit"] = cap - read
                page = self._db.query(**kw)
                total += page["Count"]
                read += page.get("ScannedCount", page["Count"])
                if "LastEvaluatedKey" not in page:
                    break
                kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]
            if total:
                counts[status] = min(total, cap)
        return counts

    def _with_status(self, page: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
        """gsi1 rows hold only `fixed`: read the rows themselves (BatchGetItem, 100 keys a call)."""
        rows: dict[str, dict[str, Any]] = {}
        keys = [{"pk": i["pk"], "sk": i["sk"]} for _, i in page]
        for start in range(0, len(keys), 100):
            pending: dict[str, Any] = {self.table: {"Keys": keys[start:start + 100]}}
            for _ in range(8):  # unprocessed keys (throttling) are retried, then reported
                got = self._db.batch_get_item(RequestItems=pending)
                for row in got.get("Responses", {}).get(self.table, []):
                    rows[row["pk"]["S"]] = row
                pending = got.get("UnprocessedKeys") or {}
                if not pending:
                    break
            if pending:
                raise RuntimeError(f"table {self.table}: index rows still unprocessed after 8 tries")
        return [(order, rows[i["pk"]["S"]]) for order, i in page if i["pk"]["S"] in rows]


def _entry(row: dict[str, Any]) -> IndexEntry:
    fixed = json.loads(row["fixed"]["S"])
    return IndexEntry(fixed["execution_id"], fixed["workflow"], fixed["version"], row["status"]["S"],
                      fixed["created_at_ms"], num(row, "updated"), fixed.get("parent_id"), attributes_of(row))


def _encode_cursor(sort_key: str) -> str:
    return base64.urlsafe_b64encode(sort_key.encode()).decode()


def _decode_cursor(cursor: str | None) -> str | None:
    if not cursor:
        return None
    try:
        return base64.urlsafe_b64decode(cursor.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        raise ValidationError(f"not a list cursor: {cursor!r}", "cursor") from None
