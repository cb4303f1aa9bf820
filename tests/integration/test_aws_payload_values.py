"""Large values are S3 objects of their own, content-addressed, referenced from items and messages."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from aws_resources import Stack
from orbit import worker
from orbit.adapters.dynamodb import DynamoHistoryStore
from orbit.adapters.s3 import S3PayloadStore
from orbit.adapters.sqs import decode_body, encode_body
from orbit.aws import wiring as aws
from orbit.core.history.events import Recorded, StepSucceeded, WorkflowCreated
from orbit.core.history.state import ExecutionState
from orbit.errors import NotFound
from orbit.service.ports import Commit

DOC = os.urandom(40_000).hex()  # 80 KB: above the 32 KB value limit, below SQS's inline limit
TS = 1_767_225_600_000


def key_of(value: Any) -> str:
    return "payloads/" + hashlib.sha256(json.dumps(value, separators=(",", ":")).encode()).hexdigest()


class S3Calls:
    """botocore hook on the session's S3 client: every request, and each PutObject's key and size."""

    def __init__(self) -> None:
        self.ops: list[str] = []
        self.puts: list[tuple[str, int]] = []

    def __call__(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.ops.append(model.name)
        if model.name == "PutObject":
            self.puts.append((params["Key"], len(params["Body"])))


@pytest.fixture
def s3_calls(clients: Any) -> Iterator[S3Calls]:
    calls = S3Calls()
    clients.s3.meta.events.register("provide-client-params.s3.*", calls)
    try:
        yield calls
    finally:
        clients.s3.meta.events.unregister("provide-client-params.s3.*", calls)


def history_store(stack: Stack, clients: Any) -> DynamoHistoryStore:
    """A store as a fresh process has it: nothing known, nothing cached."""
    return DynamoHistoryStore(clients.dynamodb, stack.table, S3PayloadStore(clients.s3, stack.bucket))


def created(doc: Any) -> Commit:
    event = WorkflowCreated("w", "1", "sha256:x", input={"doc": doc})
    return Commit(1, TS, "start:1", [Recorded(1, TS, event)])


def item_bytes(item: dict[str, Any]) -> int:
    return sum(len(v.get("B", b"")) + len(v.get("S", "")) for v in item.values())


@worker.task("test.echo_doc")
def echo_doc(input: Any, ctx: worker.TaskContext) -> Any:
    return input["doc"]


@pytest.fixture
def snapshot_every_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORBIT_SNAPSHOT_EVERY", "1")


def test_the_same_value_in_input_output_signal_and_snapshots_is_one_object(
        snapshot_every_commit: None, cloud: Any, clients: Any, s3_calls: S3Calls) -> None:
    cloud.api("POST", "/definitions", {
        "orbit": 1, "name": "dedupe", "version": "1",
        "steps": {"echo": {"task": "test.echo_doc", "input": {"doc": "{% input.doc %}"}},
                  "approval": {"wait_for": "approval"}},
        "output": {"echoed": "{% steps.echo.output %}", "signalled": "{% steps.approval.output.doc %}"}})
    start = {"workflow": "dedupe", "id": "d-1", "input": {"doc": DOC}}
    assert cloud.api("POST", "/executions", start)[0] == 201
    cloud.run_until_idle()
    assert cloud.api("POST", "/executions/d-1/signals/approval", {"payload": {"doc": DOC}})[0] == 202
    cloud.run_until_idle()
    desc = aws.services().engine.describe("d-1")
    assert desc["status"] == "COMPLETED", desc.get("error")
    assert desc["output"] == {"echoed": DOC, "signalled": DOC}
    # Start input, step input, worker dedupe record, output, signal payload, workflow output and
    # every snapshot hold the one object, written by one PutObject.
    listed = clients.s3.list_objects_v2(Bucket=cloud.stack.bucket).get("Contents", [])
    assert [(o["Key"], o["Size"]) for o in listed] == [(key_of(DOC), len(DOC) + 2)]
    assert s3_calls.puts == [(key_of(DOC), len(DOC) + 2)]
    items = clients.dynamodb.query(TableName=cloud.stack.table, KeyConditionExpression="pk = :pk",
                                   ExpressionAttributeValues={":pk": {"S": "EXEC#d-1"}})["Items"]
    snapshot = next(i for i in items if i["sk"]["S"] == "SNAP")
    assert int(snapshot["vref"]["N"]) >= 3  # input, step input/output, signal: referenced, not copied
    assert max(item_bytes(i) for i in items) < 4_000  # no item carries the 80 KB value


def test_snapshots_reference_what_commits_stored_and_a_cold_load_reads_it_once(
        stack: Stack, clients: Any, s3_calls: S3Calls) -> None:
    writer = history_store(stack, clients)
    writer.commit("s-1", created(DOC))
    state = ExecutionState(id="s-1", workflow="w", version="1", input={"doc": DOC}, created=True, last_seq=1)
    writer.save_snapshot("s-1", state.to_dict(), 1)
    assert s3_calls.puts == [(key_of(DOC), len(DOC) + 2)]  # the snapshot wrote no second copy
    snap = clients.dynamodb.get_item(TableName=stack.table,
                                     Key={"pk": {"S": "EXEC#s-1"}, "sk": {"S": "SNAP"}})
    assert snap["Item"]["vref"] == {"N": "1"} and item_bytes(snap["Item"]) < 2_000

    reader = history_store(stack, clients)  # another process: nothing cached
    s3_calls.ops.clear()
    assert reader.load("s-1").state.input == {"doc": DOC}
    assert reader.load("s-1").state.input == {"doc": DOC}
    assert s3_calls.ops == ["GetObject"]  # the second load is served by the bounded cache


def test_a_missing_value_object_names_the_execution_the_key_and_the_bucket(stack: Stack,
                                                                           clients: Any) -> None:
    history_store(stack, clients).commit("gone-1", created(DOC))
    clients.s3.delete_object(Bucket=stack.bucket, Key=key_of(DOC))
    with pytest.raises(NotFound) as info:
        history_store(stack, clients).load("gone-1")
    message = str(info.value)
    assert "execution 'gone-1'" in message and key_of(DOC) in message and repr(stack.bucket) in message
    assert "body.events[0].input.doc" in message


def test_small_values_stay_inline_without_any_s3_request(stack: Stack, clients: Any,
                                                         s3_calls: S3Calls) -> None:
    store = history_store(stack, clients)
    store.commit("small-1", created({"text": "x" * 20_000}))
    succeeded = StepSucceeded("a", output="y" * 30_000)
    store.commit("small-1", Commit(2, TS, "result:1", [Recorded(2, TS, succeeded)]))
    assert [r.event.to_dict().get("output") for r in store.history("small-1").records][1] == "y" * 30_000
    assert s3_calls.ops == []
    item = clients.dynamodb.get_item(TableName=stack.table,
                                     Key={"pk": {"S": "EXEC#small-1"}, "sk": {"S": "C#000000000001"}})["Item"]
    assert "vref" not in item and "ref" not in item


def test_messages_reference_the_same_objects_as_the_history(stack: Stack, clients: Any,
                                                            s3_calls: S3Calls) -> None:
    payloads = S3PayloadStore(clients.s3, stack.bucket)
    result = {"kind": "result", "execution_id": "m-1", "id": "result:t1", "token": "t1",
              "output": {"doc": DOC, "n": 1}}
    text = encode_body(result, payloads, inline_limit=50_000)
    assert len(text) < 2_000 and "payload_refs" in text and DOC not in text
    assert decode_body(text, S3PayloadStore(clients.s3, stack.bucket)) == result
    history_store(stack, clients).commit("m-1", created(DOC))  # a fresh process: PutObject -> 412
    listed = clients.s3.list_objects_v2(Bucket=stack.bucket).get("Contents", [])
    assert [o["Key"] for o in listed] == [key_of(DOC)]  # message and history: one object


def test_a_body_of_many_medium_values_still_spills_whole(stack: Stack, clients: Any,
                                                         s3_calls: S3Calls) -> None:
    """25 outputs of 30 KB (each under the value limit): ~750 KB of dense JSON, over the item limit."""
    outputs = [os.urandom(15_000).hex() for _ in range(25)]
    events = [Recorded(i, TS, StepSucceeded(f"s{i}", output=o)) for i, o in enumerate(outputs, start=1)]
    store = history_store(stack, clients)
    store.commit("many-1", Commit(1, TS, "result:1", events))
    item = clients.dynamodb.get_item(TableName=stack.table,
                                     Key={"pk": {"S": "EXEC#many-1"}, "sk": {"S": "C#000000000001"}})["Item"]
    assert "ref" in item and "vref" not in item and len(s3_calls.puts) == 1
    read = history_store(stack, clients).read_commit("many-1", 1)
    assert read is not None and [r.event.to_dict()["output"] for r in read.events] == outputs
