"""A 50 MB step output travels worker -> SQS -> decider -> DynamoDB -> next step, via S3, intact."""

from __future__ import annotations

import hashlib
import os
from typing import Any

import pytest
from orbit import worker
from orbit.aws import wiring as aws

SIZE = 50 * 1024 * 1024
BLOB: dict[str, str] = {}


def blob() -> str:
    if "v" not in BLOB:  # random hex: incompressible enough that every hop must spill to S3
        BLOB["v"] = os.urandom(SIZE // 2).hex()
    return BLOB["v"]


@worker.task("test.big")
def big(input: Any, ctx: worker.TaskContext) -> dict[str, str]:
    return {"blob": blob()}


@worker.task("test.measure")
def measure(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    data = input["blob"].encode()
    return {"length": len(data), "sha256": hashlib.sha256(data).hexdigest()}


@pytest.mark.slow
def test_fifty_megabyte_output_end_to_end(cloud: Any, clients: Any) -> None:
    puts: list[int] = []  # every PutObject's size (botocore hook on the session's S3 client)

    def count(params: dict[str, Any], **_: Any) -> None:
        puts.append(len(params["Body"]))

    clients.s3.meta.events.register("provide-client-params.s3.PutObject", count)
    try:
        run_fifty_megabytes(cloud, clients)
    finally:
        clients.s3.meta.events.unregister("provide-client-params.s3.PutObject", count)
    # The output is one content-addressed value: its result message, the worker's dedupe record,
    # the commit (StepSucceeded + the next StepScheduled/DispatchTask), the dispatch message and
    # the snapshots all reference it, so its 50 MB are uploaded once (adapters/payload_values.py).
    assert [size for size in puts if size > 1024 * 1024] == [SIZE + 2]  # the JSON string, quoted
    assert sum(puts) < SIZE + 1024 * 1024


def run_fifty_megabytes(cloud: Any, clients: Any) -> None:
    cloud.api("POST", "/definitions", {
        "orbit": 1, "name": "large", "version": "1",
        "steps": {"make": {"task": "test.big"},
                  "check": {"task": "test.measure", "input": "{% steps.make.output %}"}},
        "output": "{% steps.check.output %}"})
    cloud.api("POST", "/executions", {"workflow": "large", "id": "big-1", "input": {}})
    cloud.run_until_idle()
    engine = aws.services().engine
    desc = engine.describe("big-1")
    assert desc["status"] == "COMPLETED", desc.get("error")
    assert desc["output"] == {"length": SIZE, "sha256": hashlib.sha256(blob().encode()).hexdigest()}
    assert desc["steps"]["make"]["output"]["blob"] == blob()  # the stored output is the whole thing
    objects = clients.s3.list_objects_v2(Bucket=cloud.stack.bucket).get("Contents", [])
    assert max(o["Size"] for o in objects) > 20 * 1024 * 1024  # it went through S3, not truncated
