"""Archive on moto: an ended execution's history is written to S3 (gzipped JSON lines) before its
retention starts, and describe, history and replay read it once the table's copy has expired."""

from __future__ import annotations

import gzip
import json
from typing import Any
from urllib.parse import quote

import pytest
from harness import LambdaContext, load_app
from orbit import worker
from orbit.adapters.s3 import S3Archive
from orbit.aws import wiring as aws
from orbit.core.definition.retention import YOUNG_MS
from orbit.local.ttl import expire, matches_retention_filter

DAY_MS = 24 * 3600 * 1000
# These executions end young: their items expire at the close of their first hour + the retention.
PAST_EXPIRY_MS = DAY_MS + YOUNG_MS + 1_000
BIG = "z" * 100_000  # above the per-value limit: an S3 payload object, collected after the expiry

ARCHIVED = {
    "orbit": 1, "name": "archived", "version": "1", "retention": "1d",
    "steps": {"big": {"task": "arc.big"}, "approval": {"wait_for": "approval"},
              "child": {"workflow": "arc-kid", "input": {"n": "{% $length(steps.big.output) %}"}}},
    "output": {"child": "{% steps.child.output %}", "by": "{% steps.approval.output.by %}"},
}
KID = {"orbit": 1, "name": "arc-kid", "version": "1", "retention": "1d",
       "steps": {"echo": {"task": "arc.echo", "input": "{% input %}"}}, "output": "{% steps.echo.output %}"}


@worker.task("arc.big")
def big(input: Any, ctx: worker.TaskContext) -> str:
    return BIG


@worker.task("arc.echo")
def echo(input: Any, ctx: worker.TaskContext) -> Any:
    return input


@pytest.fixture
def archiving(cloud: Any, monkeypatch: pytest.MonkeyPatch, clients: Any, clock: Any) -> Any:
    monkeypatch.setenv("ORBIT_ARCHIVE_DAYS", "365")
    aws.reset(clock=clock)
    aws.services().__dict__.update(dynamodb=clients.dynamodb, sqs=clients.sqs, s3=clients.s3)
    return cloud


def _expire_all(clients: Any, stack: Any, now_ms: int) -> None:
    """DynamoDB's TTL sweep and the payload collector, as AWS would run them."""
    removed = expire(clients.dynamodb, stack.table, now_ms // 1000)
    records = [r for r in removed if matches_retention_filter(r)]
    if records:
        assert load_app("retention").handler({"Records": records}, LambdaContext("retention")) == {
            "batchItemFailures": []}


def _run(cloud: Any, eid: str) -> None:
    assert cloud.api("POST", "/executions", {"workflow": "archived", "id": eid, "input": {"a": 1}})[0] == 201
    cloud.run_until_idle()
    assert cloud.api("POST", f"/executions/{eid}/signals/approval", {"payload": {"by": "ops"}})[0] == 202
    cloud.run_until_idle()


def test_history_describe_and_replay_read_the_archive_after_expiry(archiving: Any, clients: Any, stack: Any,
                                                                   clock: Any) -> None:
    cloud = archiving
    cloud.api("POST", "/definitions", KID)
    cloud.api("POST", "/definitions", ARCHIVED)
    _run(cloud, "a-1")
    status, before = cloud.api("GET", "/executions/a-1/history")
    assert status == 200 and before[-1]["type"] == "WorkflowCompleted", before
    desc_before = cloud.api("GET", "/executions/a-1")[1]
    assert desc_before["status"] == "COMPLETED" and desc_before["output"]["child"] == {"n": 100_000}
    child_id = next(e["child_id"] for e in before if e["type"] == "ChildStarted")
    status, child_before = cloud.api("GET", f"/executions/{quote(child_id, safe='')}/history")
    assert status == 200 and child_before[-1]["type"] == "WorkflowCompleted", child_before

    # The object: a header line, then the events as history returns them (large values inline).
    raw = clients.s3.get_object(Bucket=stack.bucket, Key=S3Archive.key("a-1"))["Body"].read()
    lines = [json.loads(line) for line in gzip.decompress(raw).decode().splitlines()]
    assert lines[0]["orbit_archive"] == 1 and lines[0]["status"] == "COMPLETED"
    assert any(e.get("output") == BIG for e in lines[1:])

    clock.advance(PAST_EXPIRY_MS)  # past the retention: the table's copy is expired, then deleted
    _expire_all(clients, stack, clock.now_ms())
    left = clients.dynamodb.scan(TableName=stack.table, FilterExpression="begins_with(pk, :p)",
                                 ExpressionAttributeValues={":p": {"S": "EXEC#"}})["Items"]
    assert left == []  # nothing of either execution is left in the table
    assert not any(o["Key"].startswith("payloads/")
                   for o in clients.s3.list_objects_v2(Bucket=stack.bucket).get("Contents", []))

    status, after = cloud.api("GET", "/executions/a-1/history")
    assert status == 200 and after == before  # the round trip: the same events, hook tokens hidden alike
    assert cloud.api("GET", f"/executions/{quote(child_id, safe='')}/history")[1] == child_before
    page = cloud.api("GET", "/executions/a-1/history", query={"after_seq": "3", "limit": "2"})[1]
    assert page == before[3:5]
    status, desc_after = cloud.api("GET", "/executions/a-1")
    assert status == 200 and desc_after == desc_before
    # Replay for CI reads the same history: the archived child replays on the workflow it ran.
    from orbit.core.definition.parse import parse_definition
    from orbit.testing.replay import replay

    replay(cloud.api("GET", f"/executions/{quote(child_id, safe='')}/history")[1], parse_definition(KID))
    # Whatever would change it is still refused: the execution itself is gone.
    assert cloud.api("POST", "/executions/a-1/redrive", {})[0] == 404
    assert cloud.api("POST", "/executions/a-1/signals/approval", {"payload": {}})[0] == 404


def test_without_an_archive_an_expired_execution_is_gone(cloud: Any, clients: Any, stack: Any,
                                                         clock: Any) -> None:
    cloud.api("POST", "/definitions", KID)
    cloud.api("POST", "/definitions", ARCHIVED)
    _run(cloud, "a-2")
    assert not clients.s3.list_objects_v2(Bucket=stack.bucket, Prefix="archive/").get("Contents")
    clock.advance(PAST_EXPIRY_MS)
    status, body = cloud.api("GET", "/executions/a-2/history")
    assert status == 404 and "expired" in body["error"]["message"]
    _expire_all(clients, stack, clock.now_ms())
    assert cloud.api("GET", "/executions/a-2")[0] == 404


def test_a_crash_before_the_archive_landed_writes_it_on_redelivery(archiving: Any, clients: Any,
                                                                   stack: Any, clock: Any) -> None:
    """The decider dies at the archive's PutObject: nothing has the expiry of the retire step yet,
    the message comes back, its commit is re-sent and the archive written (the full crash matrix
    runs with the archive on: tests/integration/crash_world.py)."""
    cloud = archiving
    cloud.api("POST", "/definitions", KID)
    cloud.api("POST", "/definitions", ARCHIVED)
    engine = aws.services().engine
    real = engine.archive
    calls = {"n": 0}

    class Dying:
        def put(self, execution_id: str, data: bytes) -> None:
            calls["n"] += 1
            if calls["n"] == 1 and execution_id == "a-3":
                raise RuntimeError("the process died before the archive landed")
            real.put(execution_id, data)

        def get(self, execution_id: str) -> bytes | None:
            return real.get(execution_id)

    engine.archive = Dying()
    _run(cloud, "a-3")
    assert cloud.api("GET", "/executions/a-3")[1]["status"] == "COMPLETED"
    assert real.get("a-3") is not None
    history = cloud.api("GET", "/executions/a-3/history")[1]
    clock.advance(PAST_EXPIRY_MS)
    _expire_all(clients, stack, clock.now_ms())
    assert cloud.api("GET", "/executions/a-3/history")[1] == history

