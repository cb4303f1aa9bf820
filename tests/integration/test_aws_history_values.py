"""History pages without the values kept in S3 (the console's history), and one event with them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from aws_resources import Stack
from orbit import worker
from orbit.adapters.dynamodb import DynamoHistoryStore
from orbit.adapters.s3 import S3PayloadStore
from orbit.core.history.events import Recorded, StepScheduled, StepSucceeded, WorkflowCreated
from orbit.service.ports import Commit

DOC = os.urandom(40_000).hex()  # 80 KB: above the 32 KB value limit
OTHER = os.urandom(40_000).hex()
TS = 1_767_225_600_000


class GetObjects:
    """botocore hook on the session's S3 client: the key of every GetObject."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def __call__(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "GetObject":
            self.keys.append(params["Key"])


@pytest.fixture
def gets(clients: Any) -> Iterator[GetObjects]:
    calls = GetObjects()
    clients.s3.meta.events.register("provide-client-params.s3.*", calls)
    try:
        yield calls
    finally:
        clients.s3.meta.events.unregister("provide-client-params.s3.*", calls)


def fresh(stack: Stack, clients: Any) -> DynamoHistoryStore:
    """A store as a fresh process has it (the payload store's cache is empty)."""
    return DynamoHistoryStore(clients.dynamodb, stack.table, S3PayloadStore(clients.s3, stack.bucket))


def write(stack: Stack, clients: Any, eid: str) -> None:
    store = fresh(stack, clients)
    store.commit(eid, Commit(1, TS, "start:1", [Recorded(1, TS, WorkflowCreated("w", "1", "sha256:x",
                                                                                   input={"doc": DOC}))]))
    # one commit, two large values: the output of one step and the input of the next
    store.commit(eid, Commit(2, TS, "result:1", [
        Recorded(2, TS, StepSucceeded("a", output=OTHER)),
        Recorded(3, TS, StepScheduled("b", attempt=1, input={"doc": DOC, "n": 1})),
    ]))


def test_a_page_without_values_reads_no_object_and_names_their_paths(stack: Stack, clients: Any,
                                                                     gets: GetObjects) -> None:
    write(stack, clients, "v-1")
    gets.keys.clear()
    page = fresh(stack, clients).history("v-1", values=False)
    assert gets.keys == []
    events = [r.to_dict() for r in page.records]
    assert events[0]["input"] == {"doc": None} and events[1]["output"] is None
    assert events[2]["input"] == {"doc": None, "n": 1}  # small parts stay inline
    assert page.stored == {1: [["input", "doc"]], 2: [["output"]], 3: [["input", "doc"]]}


def test_one_event_reads_its_own_values_only(stack: Stack, clients: Any, gets: GetObjects) -> None:
    write(stack, clients, "v-2")
    gets.keys.clear()
    page = fresh(stack, clients).history("v-2", after_seq=2, limit=1)
    assert [r.to_dict()["input"] for r in page.records] == [{"doc": DOC, "n": 1}]
    assert len(gets.keys) == 1  # DOC; not OTHER, the output of seq 2 in the same commit
    assert page.stored == {}


@worker.task("test.values.big")
def big(input: Any, ctx: worker.TaskContext) -> Any:
    return {"blob": OTHER, "small": 1}


def test_the_api_serves_pages_without_values_and_one_event_with_them(cloud: Any, clients: Any,
                                                                      gets: GetObjects) -> None:
    cloud.api("POST", "/definitions", {"orbit": 1, "name": "values", "version": "1",
                                       "steps": {"make": {"task": "test.values.big"}}})
    assert cloud.api("POST", "/executions", {"workflow": "values", "id": "v-3", "input": {}})[0] == 201
    cloud.run_until_idle()
    status, events = cloud.api("GET", "/executions/v-3/history", query={"values": "inline"})
    assert status == 200
    done = next(e for e in events if e["type"] == "StepSucceeded")
    assert done["output"] == {"blob": None, "small": 1} and done["stored_values"] == [["output", "blob"]]
    assert {e["type"] for e in events if "stored_values" in e} == {"StepSucceeded", "WorkflowCompleted"}
    status, whole = cloud.api("GET", f"/executions/v-3/history/{done['seq']}")
    assert status == 200 and whole["output"] == {"blob": OTHER, "small": 1} and "stored_values" not in whole
    assert cloud.api("GET", "/executions/v-3/history")[1][done["seq"] - 1]["output"]["blob"] == OTHER
    status, body = cloud.api("GET", "/executions/v-3/history/999")
    assert status == 404 and "no event 999" in body["error"]["message"]
    assert cloud.api("GET", "/executions/v-3/history/x")[0] == 400
    assert cloud.api("GET", "/executions/v-3/history", query={"values": "some"})[0] == 400
