"""Timers on DynamoDB: due-timer items, handed to SQS by the timers function's minute tick.

The tick takes the items due within the lead (`due(now + lead)`, 15 minutes by default) and sends
each `wake` delayed to its second (Engine.fire_timers; docs/decisions/timers-on-the-second.md).

    TIMER#<shard> / <fire_at ms, 15 digits>#<execution id>   one armed timer
    TIMERPTR#<id> / PTR                                      the execution's current fire time

Why sharded partitions sorted by fire time rather than partitions per time
bucket: with the time in the sort key, `due(now)` is one Query per shard
(`sk <= now`) and `next_fire_ms` one `Limit=1` Query per shard, with no
watermark item to maintain and no empty buckets to walk after an outage. The
shard (a stable hash of the execution id) spreads writes over `shards`
partitions (about 1,000 writes/s each); fired items are deleted, so the
partitions stay small.

An execution has one timer: `arm` writes the new item first, then swaps the
pointer and deletes the item it replaced. A crash in between leaves an extra
item, whose only effect is a spurious `wake` (a decision that finds nothing
due); a lost timer is impossible.

Each write carries the seq of the commit the wake-up was derived from, and is conditional on it
(docs/decisions/delivery-engine-timers.md): the pointer (and an item of the same time) is replaced
only by an arm at least as new, so a late resend of an old commit's timer, or a decider acting on an
overtaken cached state, can never replace a newer commit's wake-up. A refused arm removes the item
it wrote, unless a newer arm wrote that item since. The conditions cost no extra request; a refusal
costs one delete.
"""

from __future__ import annotations

import hashlib
from typing import Any

from botocore.exceptions import ClientError

from orbit.adapters.dynamodb.codec import n, num, s


class DynamoTimers:
    def __init__(self, client: Any, table: str, shards: int = 4) -> None:
        self._db = client
        self.table = table
        self.shards = shards

    def _shard(self, execution_id: str) -> str:
        h = int.from_bytes(hashlib.sha256(execution_id.encode()).digest()[:4], "big")
        return f"TIMER#{h % self.shards}"

    def _key(self, execution_id: str, fire_at_ms: int) -> dict[str, Any]:
        return {"pk": s(self._shard(execution_id)), "sk": s(f"{fire_at_ms:015d}#{execution_id}")}

    def _pointer(self, execution_id: str) -> dict[str, Any]:
        # Not in the EXEC# partition: the timers function's role is limited to TIMER* keys.
        return {"pk": s(f"TIMERPTR#{execution_id}"), "sk": s("PTR")}

    def arm(self, execution_id: str, fire_at_ms: int, seq: int | None = None) -> None:
        fire_at_ms = max(0, int(fire_at_ms))
        at = n(fire_at_ms)
        item = {**self._key(execution_id, fire_at_ms), "execution_id": s(execution_id), "fire_at": at}
        pointer = {**self._pointer(execution_id), "fire_at": at}
        if seq is None:  # unordered (tests, tools): replace whatever is armed
            self._db.put_item(TableName=self.table, Item=item)
            old = self._db.put_item(TableName=self.table, ReturnValues="ALL_OLD",
                                    Item=pointer).get("Attributes")
            if old and num(old, "fire_at") != fire_at_ms:
                self._db.delete_item(TableName=self.table, Key=self._key(execution_id, num(old, "fire_at")))
            return
        newer = "attribute_not_exists(seq) OR seq <= :seq"  # no older-than-mine writer may replace it
        mine = {":seq": n(seq)}
        if not self._write_if(item | {"seq": n(seq)}, newer, mine):
            return  # a newer commit armed this very time: its arm does the rest
        try:
            old = self._db.put_item(TableName=self.table, Item=pointer | {"seq": n(seq)},
                                    ReturnValues="ALL_OLD", ConditionExpression=newer,
                                    ExpressionAttributeValues=mine).get("Attributes")
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            # A newer commit's timer is armed: take back the item written above (if still ours).
            self._delete_if(self._key(execution_id, fire_at_ms), "seq = :seq", mine)
            return
        if old and num(old, "fire_at") != fire_at_ms:  # the replaced item, unless a newer arm rewrote it
            self._delete_if(self._key(execution_id, num(old, "fire_at")), newer, mine)

    def _write_if(self, item: dict[str, Any], condition: str, values: dict[str, Any]) -> bool:
        try:
            self._db.put_item(TableName=self.table, Item=item, ConditionExpression=condition,
                              ExpressionAttributeValues=values)
            return True
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            return False

    def _delete_if(self, key: dict[str, Any], condition: str, values: dict[str, Any]) -> None:
        try:
            self._db.delete_item(TableName=self.table, Key=key, ConditionExpression=condition,
                                 ExpressionAttributeValues=values)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

    def disarm(self, execution_id: str, fire_at_ms: int | None = None) -> None:
        if fire_at_ms is None:
            # Read first: most executions never had a table timer, and a read costs a quarter of
            # a delete (this runs once per ended execution).
            if "Item" not in self._db.get_item(TableName=self.table, Key=self._pointer(execution_id),
                                               ConsistentRead=True):
                return
            old = self._db.delete_item(TableName=self.table, Key=self._pointer(execution_id),
                                       ReturnValues="ALL_OLD").get("Attributes")
            if old:
                self._db.delete_item(TableName=self.table, Key=self._key(execution_id, num(old, "fire_at")))
            return
        self._db.delete_item(TableName=self.table, Key=self._key(execution_id, fire_at_ms))
        try:  # the pointer goes only if it still names this time (a later arm may have moved it)
            self._db.delete_item(TableName=self.table, Key=self._pointer(execution_id),
                                 ConditionExpression="fire_at = :f",
                                 ExpressionAttributeValues={":f": n(fire_at_ms)})
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

    def due(self, now_ms: int, limit: int = 100) -> list[tuple[str, int]]:
        found: list[tuple[str, int]] = []
        for shard in range(self.shards):
            kw: dict[str, Any] = {
                "TableName": self.table, "Limit": limit,
                "KeyConditionExpression": "pk = :pk AND sk <= :now",
                "ExpressionAttributeValues": {":pk": s(f"TIMER#{shard}"), ":now": s(f"{now_ms:015d}#\uffff")},
            }
            items = self._db.query(**kw)["Items"]
            found += [(i["execution_id"]["S"], num(i, "fire_at")) for i in items]
        found.sort(key=lambda t: (t[1], t[0]))
        return found[:limit]

    def next_fire_ms(self) -> int | None:
        firsts = []
        for shard in range(self.shards):
            items = self._db.query(TableName=self.table, Limit=1, KeyConditionExpression="pk = :pk",
                                   ExpressionAttributeValues={":pk": s(f"TIMER#{shard}")})["Items"]
            firsts += [num(i, "fire_at") for i in items]
        return min(firsts) if firsts else None
