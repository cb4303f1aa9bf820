"""Retention on DynamoDB: TTL on every item an ended execution left, and safe deletion of payloads.

    EXEC#id / *           commits, snapshot, index rows: `expires_at` written with them while the
                          execution is young (`prov`), else set by `retire` (see service/retention.py)
    HOOK#sha256(token) / HOOK  the execution's hooks: the same `expires_at`
    IDEM#key / IDEM       worker dedupe records: already carry a TTL (7 days); shortened when the
                          retention is shorter
    BLOB#<sha256> / R#id  "execution id references payload object sha256" (no TTL while it runs)
    BLOB#<sha256> / W#id  a worker's result for execution id carries the object: held for
                          WORKER_HOLD_S, until the decider has recorded it (its own R#); then
                          shortened to the R#'s expiry and marked `rec` (a later hold leaves it)
    BLOB#<sha256> / GC    a collector's short lease while it decides to delete the object

Why references and not per-execution key prefixes: payload objects are content-addressed and one
object serves a result message, its commit, the next dispatch and every snapshot, and children
receive their parent's values by reference. Copying per execution would multiply the largest
objects; a lifecycle rule cannot know which executions still read an object.

The protocol (`BlobRefs`), which never deletes an object a retained execution references:
- a history write that carries payload references first writes `R#<id>` for each object (once per
  process and execution), then reads the object's `GC` lease, waiting while one is held, then makes
  sure the object exists (re-uploading the bytes it holds if a collector removed it), and only
  then writes the item that references it;
- `retire` gives the execution's `R#` items the execution's `expires_at`; DynamoDB's TTL deletes
  them after the retention, and the stream record of that deletion invokes the collector
  (functions/retention) for that object;
- the collector takes the `GC` lease (conditional put), reads every `R#` of the object
  (consistent), and deletes the object only when none is left that has not expired; it drops the
  lease afterwards.
A writer's reference is written before it reads the lease, a collector's lease before it reads
the references: whichever comes second sees the other, so either the collector keeps the object
or the writer waits and re-uploads it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from orbit.adapters.dynamodb.codec import (
    PROVISIONAL,
    ConditionFailed,
    expiry_attrs,
    n,
    num,
    put_if,
    s,
    update_if,
)
from orbit.service.ports import hook_key

GC_LEASE_S = 60
WAIT_FOR_LEASE_S = 5.0
# A day longer than SQS keeps a message (14 days): a result is recorded, or dead, by then. Past
# it, a result nobody recorded (a stale attempt's) no longer holds its object.
WORKER_HOLD_S = 15 * 24 * 3600
HELD_MEMORY = 100_000  # (kind, execution, object) registrations a process remembers
RECORDED = "rec"  # on a worker's hold (W#): the execution's own reference (R#) holds the object now
_OBJECT_PREFIX = "payloads/"


def digest_of(ref: str) -> str | None:
    """`s3://bucket/payloads/<sha256>` -> sha256 (None for anything else)."""
    key = ref.split("/", 3)[-1] if ref.startswith("s3://") else ""
    return key[len(_OBJECT_PREFIX):] if key.startswith(_OBJECT_PREFIX) else None


class Recorder:
    """A PayloadStore that remembers what passed through `put` (ref -> bytes) for one item write."""

    def __init__(self, payloads: Any) -> None:
        self._payloads = payloads
        self.puts: dict[str, bytes] = {}

    def put(self, data: bytes) -> str:
        ref: str = self._payloads.put(data)
        self.puts[ref] = data
        return ref

    def get(self, ref: str) -> bytes:
        data: bytes = self._payloads.get(ref)
        return data

    def digests(self) -> list[str]:
        return sorted({d for d in map(digest_of, self.puts) if d})


class BlobRefs:
    def __init__(self, client: Any, table: str, payloads: Any, clock: Any,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._db = client
        self.table = table
        self._payloads = payloads
        self._clock = clock
        self._sleep = sleep
        # (kind, execution, digest) this process registered, least recent first: a registration
        # forgotten here only costs the next write a put.
        self._held: OrderedDict[tuple[str, str, str], None] = OrderedDict()

    @staticmethod
    def key(digest: str, sk: str) -> dict[str, Any]:
        return {"pk": s(f"BLOB#{digest}"), "sk": s(sk)}

    def hold(self, execution_id: str, puts: dict[str, bytes], ttl_s: int | None = None,
             expires_at_s: int | None = None, provisional: bool = False) -> None:
        """Register `execution_id` as a reader of these objects and make sure each exists.
        Without `ttl_s` the reference lasts until `release` (or `expires_at_s`, the expiry the
        execution's items are written with: `provisional` marks a young execution's, see
        `retire`); with `ttl_s` (a worker's result), `ttl_s`."""
        kind = "R" if ttl_s is None else "W"
        for ref, data in puts.items():
            digest = digest_of(ref)
            if digest is None or (kind, execution_id, digest) in self._held:
                continue
            item = {**self.key(digest, f"{kind}#{execution_id}"), "execution_id": s(execution_id)}
            if ttl_s is not None:
                item["expires_at"] = n(self._clock.now_ms() // 1000 + ttl_s)
                # ... unless the execution's own reference already holds the object (`rec`, below):
                # then a hold is not needed, and a put would undo the shorter expiry it was given.
                try:
                    put_if(self._db, self.table, item, f"attribute_not_exists({RECORDED})")
                except ConditionFailed:
                    pass
            else:
                # A plain put: it also clears the expiry an earlier retire gave this reference.
                item.update(expiry_attrs(expires_at_s, provisional))
                self._db.put_item(TableName=self.table, Item=item)
            if kind == "R" and expires_at_s is not None:
                # The execution's own reference now holds the object: a worker's hold on it needs
                # to last no longer (an execution that ends young is never released one by one).
                try:
                    update_if(self._db, self.table, self.key(digest, f"W#{execution_id}"),
                              f"SET expires_at = :t, {RECORDED} = :y",
                              "attribute_exists(pk) AND expires_at > :t",
                              ExpressionAttributeValues={":t": n(expires_at_s), ":y": {"BOOL": True}})
                except ConditionFailed:
                    pass
            self._wait_for_collector(digest)
            self._payloads.put(data, verify=True)
            self._held[(kind, execution_id, digest)] = None
            while len(self._held) > HELD_MEMORY:
                self._held.popitem(last=False)

    def _wait_for_collector(self, digest: str) -> None:
        waited = 0.0
        while True:
            lease = self._db.get_item(TableName=self.table, ConsistentRead=True,
                                      Key=self.key(digest, "GC")).get("Item")
            if lease is None or num(lease, "until") < self._clock.now_ms():
                return
            if waited >= WAIT_FOR_LEASE_S:  # a stuck collector: fail this write, the queue retries it
                raise RuntimeError(f"payload object {digest} is being collected; retry later")
            self._sleep(0.2)
            waited += 0.2

    def release(self, execution_id: str, digests: set[str], expires_at_s: int) -> None:
        """The execution ended: its references expire with it (a worker's hold no later)."""
        for digest in sorted(digests):
            for sk, condition in ((f"R#{execution_id}", "attribute_exists(pk)"),
                                  (f"W#{execution_id}", "attribute_exists(pk) AND expires_at > :t")):
                set_expiry_if(self._db, self.table, self.key(digest, sk), n(expires_at_s), condition)
            self._held.pop(("R", execution_id, digest), None)

    def collect(self, digest: str, delete_object: Callable[[str], None]) -> bool:
        """Delete the object when no unexpired reference is left; True when it was deleted."""
        now = self._clock.now_ms()
        lease = {**self.key(digest, "GC"), "until": n(now + GC_LEASE_S * 1000),
                 "expires_at": n(now // 1000 + GC_LEASE_S * 10)}
        try:
            put_if(self._db, self.table, lease, "attribute_not_exists(pk) OR #u < :now",
                   ExpressionAttributeNames={"#u": "until"}, ExpressionAttributeValues={":now": n(now)})
        except ConditionFailed:
            return False  # another collector holds it; the TTL deletion of the last reference calls again
        try:
            live, expired = self._references(digest, now)
            if live:
                return False
            if self._clock.now_ms() > now + GC_LEASE_S * 500:
                return False  # too slow to trust the lease: a writer may be past its check
            delete_object(digest)
            for sk in expired:  # TTL would remove them too; gone now, they cost no further reads
                self._db.delete_item(TableName=self.table, Key=self.key(digest, sk))
            return True
        finally:
            self._db.delete_item(TableName=self.table, Key=self.key(digest, "GC"))

    def _references(self, digest: str, now_ms: int) -> tuple[list[str], list[str]]:
        live: list[str] = []
        expired: list[str] = []
        kw: dict[str, Any] = {"TableName": self.table, "ConsistentRead": True,
                              "KeyConditionExpression": "pk = :pk",
                              "ExpressionAttributeValues": {":pk": s(f"BLOB#{digest}")}}
        while True:
            page = self._db.query(**kw)
            for item in page["Items"]:
                if item["sk"]["S"] == "GC":
                    continue
                at = num(item, "expires_at", 0)
                (expired if at and at * 1000 <= now_ms else live).append(item["sk"]["S"])
            if "LastEvaluatedKey" not in page:
                return live, expired
            kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]


class ResultReferences:
    """The worker's side: the large values of a result it reports are held for its execution until
    the decider has recorded them (the decider's `hold` then keeps them while the execution lives)."""

    def __init__(self, blobs: BlobRefs, payloads: Any) -> None:
        self._blobs = blobs
        self._payloads = payloads

    def hold_value(self, execution_id: str, message: dict[str, Any]) -> None:
        """`message`: the result message (its `output` or `error` holds the values)."""
        from orbit.adapters.payload_values import VALUE_LIMIT, extract

        recorder = Recorder(self._payloads)
        extract(message, recorder, VALUE_LIMIT)  # the objects the result's encodings refer to
        if recorder.puts:
            self._blobs.hold(execution_id, recorder.puts, ttl_s=WORKER_HOLD_S)


def retire(db: Any, table: str, execution_id: str, ended_at_ms: int, expires_at_s: int,
           hook_tokens: list[str], dedupe_keys: list[str], blobs: BlobRefs | None,
           dedupe_ttl_s: int, written: bool = False) -> None:
    """Give every item the execution left `expires_at` (see the module docstring); idempotent.

    `written`: the execution ended young and every item of it was written with this expiry (the
    engine's write-time expiry, docs/decisions/0010-retention-archive-expiry.md: its start recorded
    the expiry, in the same item as the first commit's `expires_at`, and every later write used it);
    then only the dedupe records may need shortening. Otherwise (an execution that ended old, was
    redriven, or started before starts recorded the expiry) every item is walked."""
    t = n(expires_at_s)
    if not written:
        digests = _expire_partition(db, table, execution_id, expires_at_s)
        for token in hook_tokens:
            set_expiry_if(db, table, {"pk": s(f"HOOK#{hook_key(token)}"), "sk": s("HOOK")}, t,
                    "attribute_exists(pk)")
        if blobs is not None:
            blobs.release(execution_id, digests, expires_at_s)
    # Dedupe records were written before the end and live dedupe_ttl_s: with a retention at least
    # that long they expire in time on their own, and shortening them would cost a write each.
    if expires_at_s * 1000 - ended_at_ms < dedupe_ttl_s * 1000:
        for key in dedupe_keys:
            set_expiry_if(db, table, {"pk": s(f"IDEM#{key}"), "sk": s("IDEM")}, t,
                    "attribute_exists(pk) AND (attribute_not_exists(expires_at) OR expires_at > :t)")


def _expire_partition(db: Any, table: str, execution_id: str, expires_at_s: int) -> set[str]:
    """Every EXEC#id item gets `expires_at_s` (its provisional mark goes); returns the payload
    digests the items reference."""
    digests: set[str] = set()
    for item in execution_items(db, table, execution_id, "pk, sk, dig, expires_at, #p"):
        digests.update(item.get("dig", {}).get("SS", []))
        # a second retire costs only this read
        if num(item, "expires_at", 0) != expires_at_s or PROVISIONAL in item:
            db.update_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]},
                           UpdateExpression=f"SET expires_at = :t REMOVE {PROVISIONAL}",
                           ExpressionAttributeValues={":t": n(expires_at_s)})
    return digests


def execution_items(db: Any, table: str, execution_id: str, projection: str) -> Iterator[dict[str, Any]]:
    """Every item of the execution's partition (EXEC#id), consistent, with `projection` (`#p`
    names the provisional mark)."""
    kw: dict[str, Any] = {"TableName": table, "ConsistentRead": True, "ProjectionExpression": projection,
                          "ExpressionAttributeNames": {"#p": PROVISIONAL},
                          "KeyConditionExpression": "pk = :pk",
                          "ExpressionAttributeValues": {":pk": s(f"EXEC#{execution_id}")}}
    while True:
        page = db.query(**kw)
        yield from page["Items"]
        if "LastEvaluatedKey" not in page:
            return
        kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def set_expiry_if(db: Any, table: str, key: dict[str, Any], t: dict[str, str], condition: str) -> bool:
    """Set `expires_at` (and drop the provisional mark) when `condition` holds; whether it did."""
    try:
        update_if(db, table, key, f"SET expires_at = :t REMOVE {PROVISIONAL}", condition,
                  ExpressionAttributeValues={":t": t})
    except ConditionFailed:
        return False
    return True


def collect_removed(records: list[dict[str, Any]], blobs: BlobRefs,
                    delete_object: Callable[[str], None]) -> tuple[int, list[str]]:
    """Stream records of removed `BLOB#d / R#id` items -> (objects deleted, sequence numbers that
    failed). Each object is looked at once per batch, however many of its references expired."""
    import logging

    by_digest: dict[str, list[str]] = {}
    for r in records:
        keys = (r.get("dynamodb") or {}).get("Keys") or {}
        pk = (keys.get("pk") or {}).get("S", "")
        seq = str((r.get("dynamodb") or {}).get("SequenceNumber") or "")
        if pk.startswith("BLOB#") and r.get("eventName") == "REMOVE":
            by_digest.setdefault(pk[len("BLOB#"):], []).append(seq)
    deleted = 0
    failed: list[str] = []
    for digest, seqs in by_digest.items():
        try:
            deleted += blobs.collect(digest, delete_object)
        except Exception:  # reported per record, the stream retries them
            logging.getLogger("orbit.retention").exception("collecting payload %s failed", digest)
            failed += [s for s in seqs if s]
    return deleted, failed
