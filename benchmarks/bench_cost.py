"""What a step costs on AWS: every request the real handlers make, priced at us-east-1 list prices.

Runs N workflows of K sequential task steps on moto (in process) through the
real Lambda handlers (API start -> decider -> example-worker queue -> decider
...), counting every AWS request by service and operation with botocore event
hooks, and estimating DynamoDB capacity from the bytes of every item read and
written (moto's ConsumedCapacity is a constant, so it cannot be used). Then it
measures what one decision reads on a cold cache at 10 and at 10,000 events of
history.

    .venv/bin/python benchmarks/bench_cost.py [--workflows 20] [--steps 5] [--long 10000] [--no-dedupe]

Prices used (us-east-1, list, on-demand, no free tier), per million:
  DynamoDB write request units $0.625, read request units $0.125 (standard table class)
  SQS standard requests $0.40 (each 64 KB chunk of a request is billed as one request)
  S3 PUT $5.00, GET $0.40
  Lambda requests $0.20; duration $0.0000133334 per GB-second (arm64)
  Step Functions Standard: $25.00 per million state transitions
The Lambda event source mapping's own SQS calls (one ReceiveMessage and one
DeleteMessageBatch per batch delivered) are added per invocation; its empty
long polls on idle queues (a fixed monthly cost, not per step) are not.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "integration"), str(ROOT)]
os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "1",
        "POWERTOOLS_METRICS_NAMESPACE": "Orbit",
        "POWERTOOLS_SERVICE_NAME": "orbit",
        "POWERTOOLS_LOG_LEVEL": "ERROR",
        "ORBIT_TIMERS": "table",
    }
)
os.environ.pop("AWS_ENDPOINT_URL", None)

PRICE = {"wru": 0.625, "rru": 0.125, "sqs": 0.40, "s3_put": 5.00, "s3_get": 0.40, "lambda_req": 0.20}
GB_SECOND = 0.0000133334
SFN_PER_TRANSITION = 25.0 / 1e6
ASSUMED_DECIDER_MS = 25  # per invocation at 512 MB: an assumption, moto's timings say nothing about Lambda's


def item_size(item: dict[str, Any]) -> int:
    """DynamoDB's item size: attribute names plus values (numbers approximated as digits/2 + 1)."""
    size = 0
    for name, value in item.items():
        size += len(name.encode())
        ((kind, v),) = value.items()
        if kind == "S":
            size += len(v.encode())
        elif kind == "B":
            size += len(v)
        elif kind == "N":
            size += len(v) // 2 + 1
        elif kind in ("BOOL", "NULL"):
            size += 1
        else:
            size += len(json.dumps(v))
    return size


def kind_of(item: dict[str, Any]) -> str:
    """Which kind of item (adapters/dynamodb): commit, snapshot, index row, idempotency record..."""
    pk, sk = item.get("pk", {}).get("S", ""), item.get("sk", {}).get("S", "")
    if pk.startswith("EXEC#"):
        return {"C#": "commit", "SN": "snapshot", "A#": "index row (+GSIs)"}.get(sk[:2], sk)
    return pk.split("#", 1)[0].lower() + " items"


class Meter:
    """botocore hooks on the handlers' clients: requests by operation, capacity and SQS chunks."""

    def __init__(self, raw_dynamodb: Any) -> None:
        self.raw = raw_dynamodb  # an un-hooked client to read an item's old size (not counted)
        self.requests: Counter[str] = Counter()
        self.wru = 0.0
        self.rru = 0.0
        self.sqs_billed = 0
        self.wru_by: Counter[str] = Counter()

    def attach(self, client: Any) -> None:
        client.meta.events.register("before-call.*.*", self._before)
        client.meta.events.register("after-call.*.*", self._after)

    def _before(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        op = model.name
        if model.service_model.service_name == "dynamodb" and op in ("UpdateItem", "DeleteItem", "PutItem"):
            body = params.get("body") or {}
            if isinstance(body, (bytes, str)):
                body = json.loads(body or "{}")
            key = body.get("Key") or {k: body["Item"][k] for k in ("pk", "sk")}
            old = self.raw.get_item(TableName=body["TableName"], Key=key).get("Item")
            context["orbit_old"] = old
            context["orbit_body"] = body

    def _after(
        self, http_response: Any, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        service, op = model.service_model.service_name, model.name
        self.requests[f"{service}:{op}"] += 1
        if service == "sqs":
            body = context.get("orbit_sqs_bytes", 0)
            self.sqs_billed += max(1, math.ceil(body / 65536)) if body else 1
        if service != "dynamodb":
            return
        if op in ("Query", "GetItem"):
            items = parsed.get("Items") or ([parsed["Item"]] if parsed.get("Item") else [])
            size = sum(item_size(i) for i in items)
            consistent = context.get("orbit_consistent", False)
            self.rru += max(1, math.ceil(size / 4096)) * (1.0 if consistent else 0.5)
        elif op in ("PutItem", "UpdateItem", "DeleteItem"):
            body, old = context.get("orbit_body", {}), context.get("orbit_old")
            new = body.get("Item") or old or {}
            size = max(item_size(new), item_size(old or {}))
            units = max(1, math.ceil(size / 1024))
            for gsi in ("gsi1pk", "gsi2pk"):  # index rows also write each GSI (a key change: delete + put)
                if gsi in new or (old and gsi in old):
                    units += 2 if old and new and old.get(gsi) != new.get(gsi) else 1
            self.wru += units
            self.wru_by[kind_of(new or old or {})] += units

    def params_hook(self, client: Any) -> None:
        def note(params: dict[str, Any], context: dict[str, Any], model: Any, **_: Any) -> None:
            context["orbit_consistent"] = bool(params.get("ConsistentRead"))
            if model.service_model.service_name == "sqs":
                entries = params.get("Entries") or [params]
                context["orbit_sqs_bytes"] = sum(len(e.get("MessageBody", "").encode()) for e in entries)

        client.meta.events.register("provide-client-params.*.*", note)


def cost(meter: Meter, invocations: Counter[str]) -> dict[str, float]:
    esm_batches = sum(v for k, v in invocations.items() if k != "api" and k != "timers")
    sqs = meter.sqs_billed + 2 * esm_batches  # + the event source mapping's receive and delete per batch
    s3_put = meter.requests["s3:PutObject"]
    s3_get = meter.requests["s3:GetObject"]
    return {
        "dynamodb": meter.wru * PRICE["wru"] / 1e6 + meter.rru * PRICE["rru"] / 1e6,
        "sqs": sqs * PRICE["sqs"] / 1e6,
        "s3": s3_put * PRICE["s3_put"] / 1e6 + s3_get * PRICE["s3_get"] / 1e6,
        "lambda_decider": invocations["decider"]
        * (PRICE["lambda_req"] / 1e6 + 0.5 * ASSUMED_DECIDER_MS / 1000 * GB_SECOND),
        "sqs_requests_billed": float(sqs),
    }


def run_workflows(n: int, k: int, dedupe: bool = True) -> None:
    from aws_resources import Clients, create_stack
    from harness import Cloud
    from moto import mock_aws
    from orbit import aws, worker

    @worker.task("bench.step", dedupe=dedupe)
    def step(input: Any, ctx: worker.TaskContext) -> dict[str, int]:
        return {"n": int(input.get("prev") or 0) + 1}

    steps = {
        f"s{j}": {"task": "bench.step", "input": {"prev": f"{{% steps.s{j - 1}.output.n %}}" if j > 1 else 0}}
        for j in range(1, k + 1)
    }
    definition = {
        "orbit": 1,
        "name": "bench",
        "version": "1",
        "steps": steps,
        "output": f"{{% steps.s{k}.output %}}",
    }
    with mock_aws():
        harness_clients = Clients()  # the harness's own receive/delete: not counted
        stack = create_stack(harness_clients.dynamodb, harness_clients.sqs, harness_clients.s3)
        os.environ.update(stack.env())
        aws.reset()
        svc = aws.services()
        meter = Meter(harness_clients.dynamodb)
        for client in (svc.dynamodb, svc.sqs, svc.s3):
            meter.params_hook(client)
            meter.attach(client)
        cloud = Cloud(stack, harness_clients.sqs)
        cloud.api("POST", "/definitions", definition)
        meter.requests.clear()
        meter.wru = meter.rru = meter.sqs_billed = 0
        cloud.invocations.clear()
        started = time.perf_counter()
        for i in range(n):
            status, body = cloud.api(
                "POST", "/executions", {"workflow": "bench", "id": f"b-{i}", "input": {}}
            )
            assert status == 201, body
        cloud.run_until_idle(max_rounds=10_000)
        elapsed = time.perf_counter() - started
        done = [svc.engine.describe(f"b-{i}") for i in range(n)]
        assert all(d["status"] == "COMPLETED" and d["output"] == {"n": k} for d in done), done[0]
        total_steps = n * k
        c = cost(meter, cloud.invocations)
        print(
            f"\n== {n} workflows x {k} steps = {total_steps} steps through the handlers on moto "
            f"({elapsed:.1f} s wall; worker dedupe {'on' if dedupe else 'off: @task(dedupe=False)'})"
        )
        print("requests by operation (per step):")
        for op, count in sorted(meter.requests.items()):
            print(f"  {op:32s} {count:6d}  {count / total_steps:6.2f}")
        print(
            f"  {'all AWS API requests':32s} {sum(meter.requests.values()):6d}  "
            f"{sum(meter.requests.values()) / total_steps:6.2f}"
        )
        print(
            f"  lambda invocations: {dict(cloud.invocations)} "
            f"(event source mapping adds 2 SQS requests per SQS-triggered batch)"
        )
        print(
            f"DynamoDB capacity (estimated from item bytes): {meter.wru / total_steps:.2f} WRU and "
            f"{meter.rru / total_steps:.2f} RRU per step; WRU per step by item: "
            + ", ".join(f"{k} {v / total_steps:.2f}" for k, v in meter.wru_by.most_common())
        )
        print("$ per million steps (us-east-1 list prices):")
        orchestration = c["dynamodb"] + c["sqs"] + c["s3"]
        for name in ("dynamodb", "sqs", "s3", "lambda_decider"):
            print(f"  {name:16s} ${c[name] / total_steps * 1e6:8.2f}")
        print(
            f"  {'orchestration':16s} ${orchestration / total_steps * 1e6:8.2f}   "
            "(DynamoDB + SQS + S3; target <= $2)"
        )
        print(
            f"  {'with decider':16s} ${(orchestration + c['lambda_decider']) / total_steps * 1e6:8.2f}   "
            f"(+ decider Lambda at an assumed {ASSUMED_DECIDER_MS} ms x 512 MB per invocation)"
        )
        sfn = (k + 1) * SFN_PER_TRANSITION * n  # K task states + the terminal transition
        print(
            f"  {'Step Functions':16s} ${sfn / total_steps * 1e6:8.2f}   (Standard, {k + 1} transitions "
            f"per {k}-step workflow at $25/M)"
        )
    aws.reset()


def reads_per_decision(long: int) -> None:
    from aws_resources import Clients, create_stack
    from moto import mock_aws
    from orbit import aws

    print("\n== one decision on a cold cache (a new decider instance), by history length")
    with mock_aws():
        clients = Clients()
        stack = create_stack(clients.dynamodb, clients.sqs, clients.s3)
        os.environ.update(stack.env())
        aws.reset()
        svc = aws.services()
        svc.registry.register(
            __import__("orbit.definition", fromlist=["parse_definition"]).parse_definition(
                {"orbit": 1, "name": "held", "version": "1", "steps": {"work": {"task": "bench.held"}}}
            )
        )
        for eid, target in (("short", 10), ("long", long)):
            svc.engine.start("held", None, {}, eid)
            token = svc.engine.load_state(eid).units["work"].token
            # Heartbeats: one event each and no new units (the history grows, the step count does not).
            for i in range(1, target - len(svc.engine.history(eid)) + 1):
                svc.engine.handle(
                    {
                        "kind": "heartbeat",
                        "execution_id": eid,
                        "id": f"hb-{i}",
                        "unit": "work",
                        "token": token,
                        "details": {"i": i},
                    }
                )
            events = len(svc.engine.history(eid))
            cold = aws.build_services(os.environ)  # fresh engine: nothing cached
            cold.__dict__.update(dynamodb=svc.dynamodb, sqs=svc.sqs, s3=svc.s3)
            meter = Meter(clients.dynamodb)
            for client in (svc.dynamodb, svc.s3):
                meter.params_hook(client)
                meter.attach(client)
            cold.engine.handle(
                {
                    "kind": "heartbeat",
                    "execution_id": eid,
                    "id": f"probe-{eid}",
                    "unit": "work",
                    "token": token,
                    "details": {"probe": True},
                }
            )
            for client in (svc.dynamodb, svc.s3):
                client.meta.events.unregister("before-call.*.*", meter._before)
                client.meta.events.unregister("after-call.*.*", meter._after)
            snap = clients.dynamodb.get_item(
                TableName=stack.table, Key={"pk": {"S": f"EXEC#{eid}"}, "sk": {"S": "SNAP"}}
            ).get("Item")
            snap_bytes = item_size(snap) if snap else 0
            reads = {
                k: v
                for k, v in meter.requests.items()
                if k.split(":")[1] in ("Query", "GetItem", "GetObject")
            }
            print(
                f"  {events:6d} events: reads {reads}, ~{meter.rru:.1f} RRU; snapshot item {snap_bytes} bytes"
                f"{' (spilled to S3)' if snap and 'ref' in snap else ''}"
            )
    aws.reset()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workflows", type=int, default=20)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--long", type=int, default=10_000, help="events of the long history (0: skip)")
    ap.add_argument("--no-dedupe", action="store_true", help="register the bench task with dedupe=False")
    args = ap.parse_args()
    import logging

    logging.disable(logging.WARNING)
    run_workflows(args.workflows, args.steps, dedupe=not args.no_dedupe)
    if args.long:
        reads_per_decision(args.long)


if __name__ == "__main__":
    main()
