"""Debounce and batch buffers of triggers on DynamoDB (service/trigger_buffers.py).

    TRIGBUF#<workflow>#<trigger>#<sha256(key)> / BUF     the buffer (JSON, `rev`)

Written only by a put conditioned on the revision that was read, so two triggers functions that
add to, or flush, the same buffer at once never both win.
"""

from __future__ import annotations

import hashlib
from typing import Any

from orbit.adapters.dynamodb.codec import s
from orbit.adapters.dynamodb.revisioned import RevisionedJson


class DynamoTriggerBuffers:
    def __init__(self, client: Any, table: str) -> None:
        self._items = RevisionedJson(client, table, "buffer")
        self.table = table

    def get(self, buffer_id: str) -> tuple[dict[str, Any], int] | None:
        return self._items.get(_key(buffer_id))

    def put(self, buffer_id: str, state: dict[str, Any], expected_rev: int | None) -> int:
        return self._items.put(_key(buffer_id), buffer_id, state, expected_rev)


def _key(buffer_id: str) -> dict[str, Any]:
    return {"pk": s("TRIGBUF#" + hashlib.sha256(buffer_id.encode()).hexdigest()), "sk": s("BUF")}
