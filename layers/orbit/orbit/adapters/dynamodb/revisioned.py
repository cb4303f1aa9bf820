"""One JSON document per item, written only conditionally on its revision (`rev`).

Schedules, bulk actions and trigger buffers keep their state this way: a change reads the item,
then puts the new state conditioned on the revision it read (a claim, then an advance, as a
history's commit is conditioned on its seq), so two writers that change the same item at once never
both win: the loser gets `ConflictError` and reads again.

    <pk> / <sk>     `state` (JSON text), `rev` (1 for a new item), plus the caller's own attributes
"""

from __future__ import annotations

import json
from typing import Any

from orbit.adapters.dynamodb.codec import ConditionFailed, n, put_if, s
from orbit.errors import ConflictError


class RevisionedJson:
    """Revisioned JSON items of one kind in `table`; `what` names the kind in a conflict's message."""

    def __init__(self, client: Any, table: str, what: str) -> None:
        self._db, self.table, self.what = client, table, what

    def get(self, key: dict[str, Any]) -> tuple[dict[str, Any], int] | None:
        """The item's state and revision (a consistent read), or None."""
        item = self._db.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
        if item is None:
            return None
        return json.loads(item["state"]["S"]), int(item["rev"]["N"])

    def put(self, key: dict[str, Any], name: str, state: dict[str, Any], expected_rev: int | None,
            extra: dict[str, Any] | None = None) -> int:
        """Write `state` as revision `expected_rev + 1` (1 for a new item), with `extra` attributes;
        ConflictError if the stored revision is not `expected_rev` (or the item exists when creating)."""
        rev = (expected_rev or 0) + 1
        item = {**key, **(extra or {}), "rev": n(rev), "state": s(json.dumps(state, separators=(",", ":")))}
        try:
            if expected_rev is None:
                put_if(self._db, self.table, item, "attribute_not_exists(pk)")
            else:
                put_if(self._db, self.table, item, "rev = :rev",
                       ExpressionAttributeValues={":rev": n(expected_rev)})
        except ConditionFailed:
            message = f"{self.what} {name!r} changed meanwhile"
            raise ConflictError(f"{self.what}:{name}", rev, message) from None
        return rev
