"""Retention on moto: every item an ended execution leaves expires within its retention, payload
objects go only when no retained execution references them, expired executions are refused."""

from __future__ import annotations

from typing import Any

from harness import LambdaContext, load_app
from orbit import TaskError, worker
from orbit.adapters.dynamodb.registry import CATALOG
from orbit.adapters.s3 import S3PayloadStore
from orbit.aws import wiring as aws
from orbit.core.definition.retention import YOUNG_MS
from orbit.local.ttl import expire, matches_retention_filter

DAY_MS = 24 * 3600 * 1000
BIG = "x" * 300_000  # above the per-value limit: stored in S3, referenced from history
FAILED_ONCE: set[str] = set()

KITCHEN = {  # every feature that writes an item of its own
    "orbit": 1, "name": "kitchen", "version": "1", "retention": "2d",
    # search attributes: index rows of their own (EXEC#id / A#Q#name), one changing after the start
    "attributes": {"region": "eu", "big": "{% steps.big.status %}"},
    "steps": {
        "big": {"task": "ret.big", "retry": {"max_attempts": 3, "backoff": "1s"}},
        "nap": {"sleep": "20m"},
        "approval": {"wait_for": "approval"},
        "hooked": {"wait_for": "hooked"},
        "child": {"workflow": "kid", "input": {"value": "{% steps.big.output %}"}},
    },
    "output": {"size": "{% $length(steps.child.output.value) %}"},
}
KID = {"orbit": 1, "name": "kid", "version": "1",
       "steps": {"echo": {"task": "ret.echo", "input": "{% input %}"}}, "output": "{% steps.echo.output %}"}
SHARER = {"orbit": 1, "name": "sharer", "version": "1",
          "steps": {"big": {"task": "ret.same"}}, "output": {"n": "{% $length(steps.big.output) %}"}}


@worker.task("ret.big")
def big(input: Any, ctx: worker.TaskContext) -> str:
    if ctx.execution_id not in FAILED_ONCE:  # a retry: its dedupe record and second attempt
        FAILED_ONCE.add(ctx.execution_id)
        raise TaskError("FLAKY", "first attempt fails", retryable=True)
    # A heartbeat makes it a long task: it claims its dedupe key and stores its result (a quick
    # task on a first delivery keeps no record since issue 15), so the record's expiry is checked.
    ctx.heartbeat()
    return BIG


@worker.task("ret.echo")
def echo(input: Any, ctx: worker.TaskContext) -> Any:
    return input


@worker.task("ret.same")
def same(input: Any, ctx: worker.TaskContext) -> str:
    return BIG  # every sharer execution produces the same bytes: one S3 object


def _items(clients: Any, table: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    kw: dict[str, Any] = {"TableName": table}
    while True:
        page = clients.dynamodb.scan(**kw)
        out += page["Items"]
        if "LastEvaluatedKey" not in page:
            return out
        kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _owner(item: dict[str, Any], ids: list[str]) -> str | None:
    pk, sk = item["pk"]["S"], item["sk"]["S"]
    if pk.startswith("EXEC#"):
        return pk[5:]
    if pk.startswith("HOOK#"):
        return item["execution_id"]["S"]
    if pk.startswith("BLOB#") and sk.startswith(("R#", "W#")):
        return sk[2:]
    if pk.startswith(("IDEM#", "TIMERPTR#", "TIMER#")):
        key = pk.split("#", 1)[1] if not pk.startswith("TIMER#") else item["execution_id"]["S"]
        return max((i for i in ids if key.startswith(i)), key=len, default=key)
    return None


def _run_kitchen(cloud: Any, clock: Any, eid: str) -> None:
    assert cloud.api("POST", "/executions", {"workflow": "kitchen", "id": eid, "input": {}})[0] == 201
    cloud.run_until_idle()
    clock.advance(1_500)  # the retry's backoff
    cloud.invoke("timers", {"time": "now"})
    cloud.run_until_idle()
    assert cloud.api("POST", f"/executions/{eid}/signals/approval", {"payload": {"ok": True}})[0] == 202
    token = aws.services().engine.hook_token(eid, "hooked")  # derived from the stack secret
    assert cloud.api("POST", f"/hooks/{token}", {"payload": {"via": "hook"}})[0] == 202
    cloud.run_until_idle()
    clock.advance(20 * 60_000 + 1_500)
    cloud.invoke("timers", {"time": "now"})
    cloud.run_until_idle()


def test_every_item_of_ended_executions_expires_within_its_retention(cloud: Any, clients: Any,
                                                                      stack: Any, clock: Any) -> None:
    cloud.api("POST", "/definitions", KID)
    cloud.api("POST", "/definitions", KITCHEN)
    engine = aws.services().engine
    engine.snapshot_every = 2  # snapshots too
    _run_kitchen(cloud, clock, "k-1")
    parent = engine.load_state("k-1")
    assert parent.status == "COMPLETED", engine.describe("k-1")
    child_id = next(iter(parent.children))
    child = engine.load_state(child_id)
    # Both end young (within an hour of their start): every item keeps the provisional expiry it
    # was written with, their first hour's close + the retention (write-time expiry).
    ends = {"k-1": (parent.created_at_ms + YOUNG_MS, 2 * DAY_MS),
            child_id: (child.created_at_ms + YOUNG_MS, 30 * DAY_MS)}
    assert parent.finished_at_ms < parent.created_at_ms + YOUNG_MS
    kinds: set[str] = set()
    for item in _items(clients, stack.table):
        pk = item["pk"]["S"]
        if pk.startswith("DEF#") or pk in (CATALOG, "SWEEP"):
            continue  # definitions (and their catalog, the sweeper's cursor) belong to the stack
        owner = _owner(item, list(ends))
        assert owner in ends, f"item {pk} / {item['sk']['S']} belongs to no known execution"
        kind = pk.split("#", 1)[0]
        if kind == "EXEC":
            sk = item["sk"]["S"]
            kind += "/" + ("Q" if sk.startswith("A#Q#") else sk.split("#", 1)[0])
        kinds.add(kind)
        assert "expires_at" in item, f"{pk} / {item['sk']['S']} has no expiry"
        ended_ms, retention_ms = ends[owner]
        latest = -(-(ended_ms + retention_ms) // 1000)
        at = int(item["expires_at"]["N"])
        assert at <= latest, f"{pk} / {item['sk']['S']} expires after its retention"
        # Dedupe records and a worker result's hold may go earlier (their own 7 and 15 days).
        if not pk.startswith("IDEM#") and not item["sk"]["S"].startswith("W#"):
            assert at == latest, f"{pk} / {item['sk']['S']}: {at} != {latest}"
    # Everything the features write was there to check (timers are deleted once the execution ends).
    assert {"EXEC/C", "EXEC/SNAP", "EXEC/A", "EXEC/Q", "HOOK", "IDEM", "BLOB"} <= kinds, kinds
    # ... and the attribute rows find the execution until they expire with it
    assert [e.execution_id for e in engine.list(where={"big": "SUCCEEDED"})[0]] == ["k-1"]
    assert not any(k.startswith("TIMER") for k in kinds)


def _collect(cloud: Any, clients: Any, stack: Any, now_ms: int) -> int:
    """DynamoDB's TTL sweep, then the retention function on the filtered stream records."""
    removed = expire(clients.dynamodb, stack.table, now_ms // 1000)
    records = [r for r in removed if matches_retention_filter(r)]
    if not records:
        return 0
    response = load_app("retention").handler({"Records": records}, LambdaContext("retention"))
    assert response == {"batchItemFailures": []}
    return len(records)


def _object_exists(clients: Any, bucket: str, key: str) -> bool:
    return any(o["Key"] == key for o in clients.s3.list_objects_v2(Bucket=bucket).get("Contents", []))


def test_a_shared_object_outlives_the_first_execution_and_goes_after_the_second(
        cloud: Any, clients: Any, stack: Any, clock: Any) -> None:
    import hashlib
    import json

    cloud.api("POST", "/definitions", {**SHARER, "retention": "1d"})
    cloud.api("POST", "/executions", {"workflow": "sharer", "id": "s-1", "input": {}})
    cloud.run_until_idle()
    clock.advance(12 * 3600_000)  # the second one ends half a day later: it expires half a day later
    cloud.api("POST", "/executions", {"workflow": "sharer", "id": "s-2", "input": {}})
    cloud.run_until_idle()
    key = "payloads/" + hashlib.sha256(json.dumps(BIG).encode()).hexdigest()
    assert _object_exists(clients, stack.bucket, key)
    refs = clients.dynamodb.query(TableName=stack.table, KeyConditionExpression="pk = :p",
                                  ExpressionAttributeValues={":p": {"S": "BLOB#" + key[9:]}})["Items"]
    # Each execution's reference, and each worker result's hold until the decider recorded it.
    assert sorted(r["sk"]["S"] for r in refs) == ["R#s-1", "R#s-2", "W#s-1", "W#s-2"]

    # s-1 expired, s-2 has half a day left (both ended young: each expires at its first hour's
    # close + the retention)
    clock.advance(DAY_MS - 12 * 3600_000 + YOUNG_MS + 1_000)
    status, body = cloud.api("GET", "/executions/s-1")
    assert status == 404 and "expired" in body["error"]["message"], body
    assert cloud.api("GET", "/executions/s-1/history")[0] == 404
    assert _collect(cloud, clients, stack, clock.now_ms()) == 2  # s-1's reference and its worker's hold
    assert _object_exists(clients, stack.bucket, key), "deleted while s-2 still references it"
    fresh = S3PayloadStore(clients.s3, stack.bucket)  # no cache: read from S3
    aws.services().__dict__["payloads"] = fresh
    status, desc = cloud.api("GET", "/executions/s-2")
    assert status == 200 and desc["steps"]["big"]["output"] == BIG

    clock.advance(12 * 3600_000)
    assert _collect(cloud, clients, stack, clock.now_ms()) == 2
    assert not _object_exists(clients, stack.bucket, key)
    assert clients.dynamodb.query(TableName=stack.table, KeyConditionExpression="pk = :p",
                                  ExpressionAttributeValues={":p": {"S": "BLOB#" + key[9:]}})["Items"] == []
    assert cloud.api("GET", "/executions/s-2")[0] == 404


def test_the_bucket_has_the_lifecycle_rules_of_the_template(clients: Any, stack: Any) -> None:
    rules = clients.s3.get_bucket_lifecycle_configuration(Bucket=stack.bucket)["Rules"]
    by_id = {r["ID"]: r for r in rules}
    assert by_id["queue-bodies"]["Filter"]["Prefix"] == "messages/"
    assert by_id["queue-bodies"]["Expiration"]["Days"] == 15
    assert by_id["incomplete-uploads"]["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"] == 1
    # payloads/ has no age rule: a running execution may read an object of any age.
    assert not any(r["Filter"].get("Prefix", "").startswith("payloads") for r in rules)


def test_the_collector_and_a_writer_never_lose_an_object_between_them(clients: Any, stack: Any,
                                                                      clock: Any) -> None:
    import hashlib

    import pytest
    from orbit.adapters.dynamodb.retention import BlobRefs

    payloads = S3PayloadStore(clients.s3, stack.bucket)
    data = b'"' + b"y" * 1000 + b'"'
    ref = payloads.put(data)
    digest = hashlib.sha256(data).hexdigest()
    key = "payloads/" + digest
    gone: list[str] = []

    def delete(d: str) -> None:
        gone.append(d)
        payloads.delete(d)

    blobs = BlobRefs(clients.dynamodb, stack.table, payloads, clock)
    # Nobody references it: collected. A writer that still remembers it (this process wrote it)
    # registers its reference and finds it missing: it uploads it again before its write.
    assert blobs.collect(digest, delete) and not _object_exists(clients, stack.bucket, key)
    blobs.hold("w-1", {ref: data})
    assert _object_exists(clients, stack.bucket, key)
    # Now referenced by a running execution (no expiry): the collector keeps it.
    assert not blobs.collect(digest, delete) and _object_exists(clients, stack.bucket, key)
    assert gone == [digest]

    # A collector holds the object's lease: a writer waits for it to go...
    until = {"N": str(clock.now_ms() + 60_000)}
    lease = {"pk": {"S": "BLOB#" + digest}, "sk": {"S": "GC"}, "until": until}
    clients.dynamodb.put_item(TableName=stack.table, Item=lease)
    waits: list[float] = []

    def collector_finishes(s: float) -> None:
        waits.append(s)
        clients.dynamodb.delete_item(TableName=stack.table, Key={"pk": lease["pk"], "sk": lease["sk"]})

    waiting = BlobRefs(clients.dynamodb, stack.table, payloads, clock, sleep=collector_finishes)
    waiting.hold("w-2", {ref: data})
    assert waits == [0.2]
    # ... and a second collector does not take a lease that is held.
    clients.dynamodb.put_item(TableName=stack.table, Item=lease)
    assert not BlobRefs(clients.dynamodb, stack.table, payloads, clock).collect(digest, delete)
    # A collector stuck for good makes the write fail (the queue retries it), never proceed blind.
    with pytest.raises(RuntimeError, match="being collected"):
        stuck = BlobRefs(clients.dynamodb, stack.table, payloads, clock, sleep=lambda s: None)
        stuck.hold("w-3", {ref: data})
