"""Worker idempotency records: run a step attempt once, replay its result on redelivery.

    IDEM#<idempotency key> / IDEM          status IN_PROGRESS (with a lease), COMPLETED (with the result)
                                           or FAILED (the attempt that failed and its error)
    IDEM#cancel#<dispatch token> / IDEM    a CancelTask arrived for that token

Who writes one (orbit/worker/dedupe.py): a task that runs longer than the worker's
grace period takes an IN_PROGRESS claim with a lease, so a duplicate delivery waits
instead of running it a second time, and stores its outcome; a possible duplicate
that settles claims the key before it runs. A short task on a fresh delivery writes
nothing: its result message, folded into the history, is what a later duplicate
checks. Only possible duplicates, retries and messages that waited in a queue read
the key (`peek`, an eventually consistent read, half a read unit).

The same scheme as powertools' idempotency utility (one conditional PutItem,
`ReturnValuesOnConditionCheckFailure=ALL_OLD` so the blocking record comes back
in the same round trip, an in-progress expiry so a crashed worker does not
block the key forever), written here because Orbit needs what the utility does
not give: results of any size (spilled to S3 with the same codec as commits),
a lease a heartbeat extends, and a cancellation flag the running task can see.
The worker role may write only `IDEM#*` (and `BLOB#*`) keys (template.yaml).

Why a failure is stored, not just the claim dropped: the key is the same for every attempt,
and a dispatch can come back after its attempt failed (the worker died after reporting, or
SQS delivered it twice). Without a record it would run that attempt again. A FAILED record
names its attempt: a dispatch of that attempt or an older one is answered with the stored
error (the engine has moved on; its result is a repeat or stale), a newer attempt runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from orbit.adapters.dynamodb.codec import ConditionFailed, decode, encode, n, num, put_if, s, text

IN_PROGRESS = "IN_PROGRESS"
COMPLETED = "COMPLETED"
FAILED = "FAILED"
RESULT_TTL_S = 7 * 24 * 3600


@dataclass(frozen=True)
class Claim:
    # "lost" (peek only): an expired claim, its worker died mid-run without reporting: run it again
    outcome: Literal["run", "done", "failed", "busy", "lost"]
    result: dict[str, Any] | None = None  # for "done": {"output": ...}; for "failed": {"error": ...}


class IdempotencyStore:
    def __init__(self, client: Any, table: str, payloads: Any, clock: Any) -> None:
        self._db = client
        self.table = table
        self._payloads = payloads
        self._clock = clock

    @staticmethod
    def _key(key: str) -> dict[str, Any]:
        return {"pk": s(f"IDEM#{key}"), "sk": s("IDEM")}

    def peek(self, key: str, attempt: int = 1) -> Claim:
        """Read the key: its cached result, the failure of this `attempt` or a later one, a live
        claim ("busy"), an expired one ("lost"), or nothing.

        Eventually consistent (half the price): a duplicate that matters comes after a visibility
        timeout (a redelivery) or after a decision was redelivered (a re-sent dispatch), tens of
        seconds after the write it must see, while replicas lag well under a second. A duplicate
        racing the first delivery within that second could run twice either way (see above); the
        conditional `complete` still makes both report the first stored result.
        Why not a conditional put first (ALL_OLD returns the cached result on the duplicate path):
        that is a write unit on every step (4x a consistent read, 8x this one) and `complete`
        would still have to write the result.
        """
        item = self._db.get_item(TableName=self.table, Key=self._key(key)).get("Item")
        if item is None:
            return Claim("run")
        if text(item, "status") == COMPLETED:
            return Claim("done", decode(item, self._payloads))
        if text(item, "status") == FAILED and num(item, "attempt", 0) >= attempt:
            return Claim("failed", decode(item, self._payloads))
        if text(item, "status") == IN_PROGRESS:
            return Claim("busy" if num(item, "lease_until") >= self._clock.now_ms() else "lost")
        return Claim("run")

    def claim(self, key: str, token: str, lease_ms: int, attempt: int = 1) -> Claim:
        """Take the key for this attempt: run it, return its cached result, or report it busy."""
        now = self._clock.now_ms()
        item = {**self._key(key), "status": s(IN_PROGRESS), "token": s(token),
                "lease_until": n(now + lease_ms), "expires_at": n(now // 1000 + RESULT_TTL_S)}
        try:
            put_if(self._db, self.table, item,
                   "attribute_not_exists(pk) OR (#st = :running AND lease_until < :now)"
                   " OR (#st = :failed AND #at < :attempt)",
                   ExpressionAttributeNames={"#st": "status", "#at": "attempt"},
                   ExpressionAttributeValues={":running": s(IN_PROGRESS), ":now": n(now),
                                              ":failed": s(FAILED), ":attempt": n(attempt)})
        except ConditionFailed as e:
            old = e.old or {}
            if text(old, "status") == COMPLETED:
                return Claim("done", decode(old, self._payloads))
            if text(old, "status") == FAILED:
                return Claim("failed", decode(old, self._payloads))
            return Claim("busy")
        return Claim("run")

    def extend(self, key: str, token: str, lease_ms: int) -> None:
        """Push the lease out (heartbeat); a no-op if another attempt or a result replaced ours."""
        try:
            self._db.update_item(
                TableName=self.table, Key=self._key(key), UpdateExpression="SET lease_until = :until",
                ConditionExpression="#st = :running AND #tok = :token",
                ExpressionAttributeNames={"#st": "status", "#tok": "token"},
                ExpressionAttributeValues={":until": n(self._clock.now_ms() + lease_ms),
                                           ":running": s(IN_PROGRESS), ":token": s(token)})
        except self._db.exceptions.ConditionalCheckFailedException:
            pass

    def complete(self, key: str, token: str, result: dict[str, Any]) -> dict[str, Any]:
        """Store a success unless one is stored already; returns the result that counts (first wins)."""
        now = self._clock.now_ms()
        item = {**self._key(key), "status": s(COMPLETED), "token": s(token), "completed_at": n(now),
                "expires_at": n(now // 1000 + RESULT_TTL_S), **encode(result, self._payloads)}
        try:
            put_if(self._db, self.table, item, "attribute_not_exists(pk) OR #st <> :done",
                   ExpressionAttributeNames={"#st": "status"},
                   ExpressionAttributeValues={":done": s(COMPLETED)})
        except ConditionFailed as e:
            stored: dict[str, Any] = decode(e.old or {}, self._payloads)
            return stored
        return result

    def fail(self, key: str, token: str, attempt: int, error: dict[str, Any]) -> None:
        """Record that `attempt` failed (replacing our claim): a redelivery of it answers `error`
        without running, the next attempt runs. Never replaces a result, another worker's claim
        or a later attempt's failure (then there is nothing to record)."""
        now = self._clock.now_ms()
        item = {**self._key(key), "status": s(FAILED), "token": s(token), "attempt": n(attempt),
                "expires_at": n(now // 1000 + RESULT_TTL_S), **encode({"error": error}, self._payloads)}
        try:
            put_if(self._db, self.table, item,
                   "attribute_not_exists(pk) OR (#st = :running AND #tok = :token)"
                   " OR (#st = :failed AND #at < :attempt)",
                   ExpressionAttributeNames={"#st": "status", "#tok": "token", "#at": "attempt"},
                   ExpressionAttributeValues={":running": s(IN_PROGRESS), ":token": s(token),
                                              ":failed": s(FAILED), ":attempt": n(attempt)})
        except ConditionFailed:
            pass

    def request_cancel(self, token: str) -> None:
        now = self._clock.now_ms()
        self._db.put_item(TableName=self.table, Item={
            "pk": s(f"IDEM#cancel#{token}"), "sk": s("IDEM"), "at": n(now),
            "expires_at": n(now // 1000 + RESULT_TTL_S)})

    def cancelled(self, token: str) -> bool:
        item = self._db.get_item(TableName=self.table, Key={"pk": s(f"IDEM#cancel#{token}"), "sk": s("IDEM")})
        return "Item" in item and num(item["Item"], "at", 0) > 0
