"""Debounce and batch buffers of triggers on DynamoDB (service/trigger_buffers.py).

    TRIGBUF#<workflow>#<trigger>#<sha256(key)> / BUF     the buffer (JSON, `rev`)

Written only by a put conditioned on the revision that was read, so two triggers functions that
add to, or flush, the same buffer at once never both win.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from orbit.adapters.dynamodb.codec import ConditionFailed, n, put_if, s
from orbit.errors import ConflictError


class DynamoTriggerBuffers:
    def __init__(self, client: Any, table: str) -> None:
        self._db, self.table = client, table

    def get(self, buffer_id: str) -> tuple[dict[str, Any], int] | None:
        item = self._db.get_item(TableName=self.table, Key=_key(buffer_id), ConsistentRead=True).get("Item")
        if item is None:
            return None
        return json.loads(item["state"]["S"]), int(item["rev"]["N"])

    def put(self, buffer_id: str, state: dict[str, Any], expected_rev: int | None) -> int:
        rev = (expected_rev or 0) + 1
        item = {**_key(buffer_id), "rev": n(rev), "state": s(json.dumps(state, separators=(",", ":")))}
        try:
            if expected_rev is None:
                put_if(self._db, self.table, item, "attribute_not_exists(pk)")
            else:
                put_if(
                    self._db,
                    self.table,
                    item,
                    "rev = :rev",
                    ExpressionAttributeValues={":rev": n(expected_rev)},
                )
        except ConditionFailed:
            raise ConflictError(f"buffer:{buffer_id}", rev, "the trigger buffer changed meanwhile") from None
        return rev


def _key(buffer_id: str) -> dict[str, Any]:
    return {"pk": s("TRIGBUF#" + hashlib.sha256(buffer_id.encode()).hexdigest()), "sk": s("BUF")}
