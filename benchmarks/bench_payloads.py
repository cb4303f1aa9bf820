"""Bytes a large step output costs: what is written to DynamoDB, S3 and SQS for one workflow.

Runs `make -> check` on moto through the real handlers: `make` returns an
output of --mb megabytes, `check` takes it as its input and returns its
length. Every write request is counted with botocore hooks on the engine's
clients (DynamoDB PutItem/UpdateItem item sizes and write units, S3
PutObject/GetObject/HeadObject, SQS send sizes).

    .venv/bin/python benchmarks/bench_payloads.py [--mb 5] [--data hex|rows] [--snapshot-every 25]

To compare with another version of the engine, put its package first:
    PYTHONPATH=/tmp/orbit-before/layers/orbit .venv/bin/python benchmarks/bench_payloads.py
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "integration"), str(ROOT / "benchmarks")]
os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                   "AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "1",
                   "POWERTOOLS_METRICS_NAMESPACE": "Orbit", "POWERTOOLS_SERVICE_NAME": "orbit",
                   "POWERTOOLS_LOG_LEVEL": "ERROR", "ORBIT_TIMERS": "table"})
os.environ.pop("AWS_ENDPOINT_URL", None)

from cost_meter import item_size  # noqa: E402


class Bytes:
    def __init__(self) -> None:
        self.count: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()
        self.wru = 0

    def params(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        service, op = model.service_model.service_name, model.name
        name = f"{service}:{op}"
        self.count[name] += 1
        if service == "dynamodb" and op == "PutItem":
            size = item_size(params["Item"])
            self.bytes[name] += size
            self.wru += max(1, math.ceil(size / 1024))  # the new item's units (old items are small here)
        elif service == "s3" and op == "PutObject":
            self.bytes[name] += len(params["Body"])
        elif service == "sqs" and op == "SendMessageBatch":
            self.bytes[name] += sum(len(e["MessageBody"].encode()) for e in params["Entries"])
        elif service == "sqs" and op == "SendMessage":
            self.bytes[name] += len(params["MessageBody"].encode())

    def after(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "GetObject":
            self.bytes["s3:GetObject"] += int(parsed.get("ContentLength", 0))


def value(mb: float, data: str) -> Any:
    n = int(mb * 1024 * 1024)
    if data == "hex":  # random: compresses ~2x, like encoded binary
        return {"blob": os.urandom(n // 2).hex()}
    row = {"id": 0, "name": "customer", "city": "Lisbon", "items": [1, 2, 3], "note": "n" * 20}
    rows = [dict(row, id=i) for i in range(n // len(json.dumps(row)))]  # typical JSON: compresses ~8x
    return {"rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=5.0)
    ap.add_argument("--data", choices=("hex", "rows"), default="hex")
    ap.add_argument("--snapshot-every", type=int, default=25)
    args = ap.parse_args()
    os.environ["ORBIT_SNAPSHOT_EVERY"] = str(args.snapshot_every)

    import orbit
    from aws_resources import mocked_services
    from harness import Cloud
    from orbit import worker

    output = value(args.mb, args.data)

    @worker.task("bench.make")
    def make(input: Any, ctx: worker.TaskContext) -> Any:
        return output

    @worker.task("bench.check")
    def check(input: Any, ctx: worker.TaskContext) -> Any:
        return {"length": len(json.dumps(input))}

    with mocked_services() as (raw, stack, svc):
        meter = Bytes()
        for client in (svc.dynamodb, svc.sqs, svc.s3):
            client.meta.events.register("provide-client-params.*.*", meter.params)
            client.meta.events.register("after-call.s3.GetObject", meter.after)
        cloud = Cloud(stack, raw.sqs)
        with contextlib.redirect_stdout(io.StringIO()):
            cloud.api("POST", "/definitions", {
                "orbit": 1, "name": "big", "version": "1",
                "steps": {"make": {"task": "bench.make"},
                          "check": {"task": "bench.check", "input": "{% steps.make.output %}"}},
                "output": "{% steps.check.output %}"})
            meter.__init__()  # count the execution, not the registration
            cloud.api("POST", "/executions", {"workflow": "big", "id": "big-1", "input": {}})
            cloud.run_until_idle()
        desc = svc.engine.describe("big-1")
        assert desc["status"] == "COMPLETED", desc.get("error")
        assert desc["output"] == {"length": len(json.dumps(output))}
        objects = raw.s3.list_objects_v2(Bucket=stack.bucket).get("Contents", [])

    mb = 1024 * 1024
    print(f"engine: {Path(orbit.__file__).parent}")
    print(f"output: {args.data}, {len(json.dumps(output)) / mb:.2f} MB of JSON; "
          f"snapshot every {args.snapshot_every}")
    print(f"DynamoDB PutItem: {meter.count['dynamodb:PutItem']} items, "
          f"{meter.bytes['dynamodb:PutItem'] / 1024:.1f} KB, ~{meter.wru} WRU (new item sizes)")
    print(f"S3 PutObject: {meter.count['s3:PutObject']} requests, {meter.bytes['s3:PutObject'] / mb:.2f} MB; "
          f"objects stored: {len(objects)}, {sum(o['Size'] for o in objects) / mb:.2f} MB")
    print(f"S3 GetObject: {meter.count['s3:GetObject']} requests, {meter.bytes['s3:GetObject'] / mb:.2f} MB; "
          f"HeadObject: {meter.count['s3:HeadObject']}")
    sqs = meter.bytes["sqs:SendMessageBatch"] + meter.bytes["sqs:SendMessage"]
    print(f"SQS sends: {meter.count['sqs:SendMessageBatch'] + meter.count['sqs:SendMessage']} requests, "
          f"{sqs / 1024:.1f} KB")


if __name__ == "__main__":
    main()
