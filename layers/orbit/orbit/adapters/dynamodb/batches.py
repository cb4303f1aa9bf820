"""Bulk action records on DynamoDB (orbit/service/batches.py): one item per batch, written only
conditionally on its `rev`, as a schedule is.

    BATCH#<id> / BATCH     the batch (action, filter, cursor, pending page, counts as JSON), `rev`;
                           `expires_at` (the table's TTL) 30 days after it ended
"""

from __future__ import annotations

from typing import Any

from orbit.adapters.dynamodb.codec import n, s
from orbit.adapters.dynamodb.revisioned import RevisionedJson


class DynamoBatchStore:
    def __init__(self, client: Any, table: str) -> None:
        self._items = RevisionedJson(client, table, "batch")
        self.table = table

    def get(self, batch_id: str) -> tuple[dict[str, Any], int] | None:
        return self._items.get(_key(batch_id))

    def put(self, batch_id: str, state: dict[str, Any], expected_rev: int | None) -> int:
        """Write `state` as revision `expected_rev + 1` (1 for a new batch); ConflictError if the
        stored revision is not `expected_rev` (or the batch exists when creating)."""
        ttl = state.get("expires_at_s")
        return self._items.put(_key(batch_id), batch_id, state, expected_rev,
                               {"expires_at": n(ttl)} if isinstance(ttl, int) else None)


def _key(batch_id: str) -> dict[str, Any]:
    return {"pk": s(f"BATCH#{batch_id}"), "sk": s("BATCH")}
