"""The retention sweeper's side of the table: executions that stopped being young, and pinning them.

    SWEEP / RETENTION   the sweeper's cursor: `cursor` = the index sort key (created#id) up to
                        which every running execution has been pinned (it only moves forward)

A young execution's items carry a provisional expiry and the mark `prov` (service/retention.py).
`aging` lists, oldest first, the running executions created in a window (gsi2, the partitions
`ST#RUNNING` and `ST#COMPENSATING`, sort key `created#id`); `pin` gives each item of one that
still has the mark an expiry no table reaches, conditionally on the mark: `retire` removes it when
it writes the exact expiry, so a sweeper racing the execution's end never pins it for good.
"""

from __future__ import annotations

from typing import Any

from orbit.adapters.dynamodb.codec import PROVISIONAL, ConditionFailed, n, put_if, s, text
from orbit.adapters.dynamodb.retention import execution_items, set_expiry_if
from orbit.service.ports import hook_key

SWEEP_KEY = {"pk": s("SWEEP"), "sk": s("RETENTION")}
AGING_STATUSES = ("RUNNING", "COMPENSATING")


class SweepRows:
    """Mixin of DynamoHistoryStore: `aging`, `pin`, `sweep_cursor`, `advance_sweep`."""

    _db: Any
    table: str

    def aging(self, after: str | None, created_before_ms: int, limit: int) -> list[tuple[str, str]]:
        """(sort key, execution id) of running executions with after < created#id and created <
        `created_before_ms`, oldest first, at most `limit` (the smallest keys of both partitions)."""
        found: list[tuple[str, str]] = []
        upper = f"{max(0, created_before_ms):015d}"
        if after is not None and after >= upper:
            return []  # (a clock behind the last sweep's: BETWEEN would refuse the bounds)
        for status in AGING_STATUSES:
            values: dict[str, Any] = {":pk": s(f"ST#{status}"), ":hi": s(upper)}
            cond = "gsi2pk = :pk AND gsi2sk < :hi"
            if after:  # inclusive: the cursor's own row is dropped below
                cond, values[":lo"] = "gsi2pk = :pk AND gsi2sk BETWEEN :lo AND :hi", s(after)
            kw: dict[str, Any] = {"TableName": self.table, "IndexName": "gsi2", "Limit": limit + 1,
                                  "KeyConditionExpression": cond,
                                  "ExpressionAttributeValues": values, "ProjectionExpression": "gsi2sk"}
            got: list[tuple[str, str]] = []
            while len(got) < limit:
                page = self._db.query(**kw)
                got += [(i["gsi2sk"]["S"], i["gsi2sk"]["S"].split("#", 1)[1]) for i in page["Items"]
                        if i["gsi2sk"]["S"] != after]
                if "LastEvaluatedKey" not in page:
                    break
                kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]
            found += got[:limit]
        return sorted(found)[:limit]

    def pin(self, execution_id: str, hook_tokens: list[str], until_s: int) -> int:
        """Every item of the execution still marked provisional expires at `until_s` instead (its
        commits, snapshot, index rows, payload references, hooks); returns how many were changed."""
        digests: set[str] = set()
        marked: list[dict[str, Any]] = []
        for item in execution_items(self._db, self.table, execution_id, "pk, sk, dig, #p"):
            digests.update(item.get("dig", {}).get("SS", []))
            if PROVISIONAL in item:
                marked.append({"pk": item["pk"], "sk": item["sk"]})
        marked += [{"pk": s(f"BLOB#{d}"), "sk": s(f"R#{execution_id}")} for d in sorted(digests)]
        marked += [{"pk": s(f"HOOK#{hook_key(t)}"), "sk": s("HOOK")} for t in hook_tokens]
        until = n(until_s)
        return sum(set_expiry_if(self._db, self.table, key, until, f"attribute_exists({PROVISIONAL})")
                   for key in marked)

    def sweep_cursor(self) -> str | None:
        item = self._db.get_item(TableName=self.table, ConsistentRead=True, Key=SWEEP_KEY).get("Item")
        return text(item, "cursor") if item else None

    def advance_sweep(self, cursor: str) -> None:
        """Move the cursor forward to `cursor` (never back: two sweepers may race)."""
        try:
            put_if(self._db, self.table, {**SWEEP_KEY, "cursor": s(cursor)},
                   "attribute_not_exists(pk) OR #c < :c",
                   ExpressionAttributeNames={"#c": "cursor"}, ExpressionAttributeValues={":c": s(cursor)})
        except ConditionFailed:
            pass
