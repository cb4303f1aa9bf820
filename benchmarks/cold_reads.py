"""Reads of one decision on a cold cache, by history length (bench_cost.py --long N).

One execution holds a task open while heartbeats grow its history (one event
and one commit each, no new steps), and at 10, 100, 1,000 ... N events a fresh
engine (a new decider instance: nothing cached) decides one more heartbeat.
Every DynamoDB/S3 read of that decision is counted with botocore hooks. A load
reads the snapshot plus the commits after it, so the figure depends on where
the execution is in its snapshot cycle, never on how long the history is: the
last line measures the worst point of the cycle (one commit before the next
snapshot) at the longest history.
"""

from __future__ import annotations

import os
from typing import Any

from cost_meter import Meter, item_size


def _heartbeat(eid: str, token: str, mid: str, i: int) -> dict[str, Any]:
    return {"kind": "heartbeat", "execution_id": eid, "id": mid, "unit": "work", "token": token,
            "details": {"i": i}}


def reads_per_decision(long: int) -> None:
    from aws_resources import mocked_services
    from orbit.aws import wiring as aws
    from orbit.core.definition import parse_definition

    print("\n== one decision on a cold cache (a new decider instance), by history length")
    with mocked_services() as (clients, stack, svc):
        svc.registry.register(parse_definition(
            {"orbit": 1, "name": "held", "version": "1", "steps": {"work": {"task": "bench.held"}}}))
        every = svc.engine.snapshot_every
        eid = "held-1"
        svc.engine.start("held", None, {}, eid)
        token = svc.engine.load_state(eid).units["work"].token
        sent = 0

        def grow_to(events: int) -> None:
            nonlocal sent
            for _ in range(events - len(svc.engine.history(eid))):
                sent += 1
                svc.engine.handle(_heartbeat(eid, token, f"hb-{sent}", sent))

        def probe(label: str) -> None:
            nonlocal sent
            loaded = svc.store.load(eid)
            tail, events = len(loaded.commits), len(svc.engine.history(eid))
            cold = aws.build_services(os.environ)  # fresh engine: nothing cached
            cold.__dict__.update(dynamodb=svc.dynamodb, sqs=svc.sqs, s3=svc.s3)
            meter = Meter(clients.dynamodb, stack.table)
            for client in (svc.dynamodb, svc.s3):
                meter.attach(client)
            sent += 1
            cold.engine.handle(_heartbeat(eid, token, f"probe-{sent}", sent))
            for client in (svc.dynamodb, svc.s3):
                meter.detach(client)
            snap = clients.dynamodb.get_item(
                TableName=stack.table, Key={"pk": {"S": f"EXEC#{eid}"}, "sk": {"S": "SNAP"}}).get("Item")
            reads = {k.split(":", 1)[1]: v for k, v in sorted(meter.requests.items())
                     if k.split(":")[1].split(" ")[0] in ("Query", "GetItem", "GetObject")}
            print(f"  {events:6d} events{label}: ~{meter.rru:4.1f} RRU, reads {reads}; "
                  f"snapshot {item_size(snap) if snap else 0} bytes + {tail} commits after it")

        lengths = sorted({n for n in (10, 100, 1_000, long) if n <= long})
        for n in lengths:
            grow_to(n)
            probe("")
        # The worst point of the snapshot cycle: the most commits after the snapshot.
        loaded = svc.store.load(eid)
        for _ in range(every - 1 - len(loaded.commits)):
            sent += 1
            svc.engine.handle(_heartbeat(eid, token, f"hb-{sent}", sent))
        probe(f" (worst point of the {every}-commit snapshot cycle)")
