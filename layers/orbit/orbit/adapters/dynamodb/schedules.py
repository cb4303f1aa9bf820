"""Schedule state on DynamoDB: one item per schedule, written only conditionally on its `rev`.

    SCHED#<id> / SCHED     the schedule (config + state as JSON, `rev`); gsi2 lists them by id

Every change is a put conditioned on the revision that was read (claim, then
advance, as a history's commit is conditioned on its seq): two deciders that
fire the same schedule at once cannot both claim an occurrence.
"""

from __future__ import annotations

import json
from typing import Any

from orbit.adapters.dynamodb.codec import s
from orbit.adapters.dynamodb.revisioned import RevisionedJson

LIST_PK = "SCHEDULES"


class DynamoScheduleStore:
    def __init__(self, client: Any, table: str) -> None:
        self._db = client
        self._items = RevisionedJson(client, table, "schedule")
        self.table = table

    def get(self, schedule_id: str) -> tuple[dict[str, Any], int] | None:
        return self._items.get(_key(schedule_id))

    def put(self, schedule_id: str, state: dict[str, Any], expected_rev: int | None) -> int:
        """Write `state` as revision `expected_rev + 1` (or 1 for a new schedule); ConflictError if
        the stored revision is not `expected_rev` (or the schedule exists when creating)."""
        return self._items.put(_key(schedule_id), schedule_id, state, expected_rev,
                               {"gsi2pk": s(LIST_PK), "gsi2sk": s(schedule_id)})

    def delete(self, schedule_id: str) -> bool:
        out = self._db.delete_item(TableName=self.table, Key=_key(schedule_id), ReturnValues="ALL_OLD")
        return "Attributes" in out

    def list(self, limit: int = 50, cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        kw: dict[str, Any] = {}
        if cursor:
            kw["ExclusiveStartKey"] = {**_key(cursor), "gsi2pk": s(LIST_PK), "gsi2sk": s(cursor)}
        out = self._db.query(TableName=self.table, IndexName="gsi2", KeyConditionExpression="gsi2pk = :p",
                             ExpressionAttributeValues={":p": s(LIST_PK)}, Limit=max(1, min(limit, 100)),
                             **kw)
        states = [_state(i) for i in out.get("Items", [])]
        last = out.get("LastEvaluatedKey")
        return states, (last["gsi2sk"]["S"] if last else None)


def _state(item: dict[str, Any]) -> dict[str, Any]:
    """A listed row's state; one that is not JSON (written by hand) is listed as unreadable, not
    failing the whole page."""
    try:
        state = json.loads(item["state"]["S"])
        if isinstance(state, dict):
            return state
    except (KeyError, TypeError, ValueError):
        pass
    sid = (item.get("gsi2sk") or {}).get("S")
    return {"config": {"id": sid}, "unreadable": "its stored state is not a JSON object"}


def _key(schedule_id: str) -> dict[str, Any]:
    return {"pk": s(f"SCHED#{schedule_id}"), "sk": s("SCHED")}
