"""Bulk action records on DynamoDB (orbit/service/batches.py): one item per batch, written only
conditionally on its `rev`, as a schedule is.

    BATCH#<id> / BATCH     the batch (action, filter, cursor, pending page, counts as JSON), `rev`;
                           `expires_at` (the table's TTL) 30 days after it ended
"""

from __future__ import annotations

import json
from typing import Any

from orbit.adapters.dynamodb.codec import ConditionFailed, n, put_if, s
from orbit.errors import ConflictError


class DynamoBatchStore:
    def __init__(self, client: Any, table: str) -> None:
        self._db = client
        self.table = table

    def get(self, batch_id: str) -> tuple[dict[str, Any], int] | None:
        item = self._db.get_item(TableName=self.table, Key=_key(batch_id), ConsistentRead=True).get("Item")
        if item is None:
            return None
        return json.loads(item["state"]["S"]), int(item["rev"]["N"])

    def put(self, batch_id: str, state: dict[str, Any], expected_rev: int | None) -> int:
        """Write `state` as revision `expected_rev + 1` (1 for a new batch); ConflictError if the
        stored revision is not `expected_rev` (or the batch exists when creating)."""
        rev = (expected_rev or 0) + 1
        item = {**_key(batch_id), "rev": n(rev), "state": s(json.dumps(state, separators=(",", ":")))}
        if isinstance(state.get("expires_at_s"), int):
            item["expires_at"] = n(state["expires_at_s"])
        try:
            if expected_rev is None:
                put_if(self._db, self.table, item, "attribute_not_exists(pk)")
            else:
                put_if(self._db, self.table, item, "rev = :rev",
                       ExpressionAttributeValues={":rev": n(expected_rev)})
        except ConditionFailed:
            raise ConflictError(f"batch:{batch_id}", rev, f"batch {batch_id!r} changed meanwhile") from None
        return rev


def _key(batch_id: str) -> dict[str, Any]:
    return {"pk": s(f"BATCH#{batch_id}"), "sk": s("BATCH")}
