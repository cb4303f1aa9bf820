"""What a schedule fire costs on AWS, from counted requests (moto, the real decider code).

A schedule `every 1m` (overlap allow_all) of a one-step workflow fires N times. Each fire is what
EventBridge Scheduler delivers: one message on the decision queue, handled by the decider as AWS
would (Engine.handle_batch), which claims the occurrence, starts the run, advances and re-arms the
one-time AWS schedule. The run itself then completes and its end notice comes back to the schedule.
Requests are counted by botocore hooks and priced with bench_cost's list prices (us-east-1,
on-demand) plus EventBridge Scheduler's $1.00 per million invocations (its API calls are not billed).

Then N queries of one of those runs (a definition's `queries:` expression): a query reads the state
once and writes nothing.

Then N updates of a running code workflow (docs/updates.md): the API validates on a side replay
(one state read), sends one message, the decider records it and runs the handler (one decision,
one commit), and the caller reads the outcome (here once, after the decision; a caller that
polls while the decision runs adds one state read per 200 ms).

    python benchmarks/bench_schedules.py [--fires 200] [--queries 200] [--updates 200]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "integration"), str(ROOT), str(ROOT / "benchmarks")]
os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                   "AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "1",
                   "POWERTOOLS_METRICS_NAMESPACE": "Orbit", "POWERTOOLS_SERVICE_NAME": "orbit",
                   "POWERTOOLS_LOG_LEVEL": "ERROR", "ORBIT_TIMERS": "table"})
os.environ.pop("AWS_ENDPOINT_URL", None)

from bench_cost import PRICE  # noqa: E402
from cost_meter import Meter  # noqa: E402

SCHEDULER_INVOCATION = 1.00  # $ per million EventBridge Scheduler invocations
QUICK = {"orbit": 1, "name": "bench-sched", "version": "1", "steps": {"done": {"compute": "{% input %}"}},
         "queries": {"answer": "{% steps.done.output %}"}}


class Clock:
    def __init__(self) -> None:
        self.now = 1_767_225_600_000

    def now_ms(self) -> int:
        return self.now


def drain(svc, clients, stack) -> None:
    from orbit.adapters.sqs import decode_bodies

    url = stack.queues["DecisionQueue"]
    while True:
        got = clients.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not got:
            return
        bodies = [b for m in got for b in decode_bodies(m["Body"], svc.payloads)]
        svc.engine.handle_batch(bodies)
        for m in got:
            clients.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fires", type=int, default=200)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--updates", type=int, default=200)
    args = ap.parse_args()
    import boto3
    from aws_resources import Clients, create_stack
    from moto import mock_aws
    from orbit.aws import wiring as aws

    with mock_aws():
        clients = Clients()
        stack = create_stack(clients.dynamodb, clients.sqs, clients.s3)
        scheduler = boto3.client("scheduler", region_name="us-east-1")
        scheduler.create_schedule_group(Name="bench")
        os.environ.update({**stack.env(), "ORBIT_SCHEDULE_GROUP": "bench",
                           "ORBIT_SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/s",
                           "ORBIT_DECISION_QUEUE_ARN": stack.arns["DecisionQueue"]})
        clock = Clock()
        aws.reset(clock=clock)
        svc = aws.services()
        meter = Meter(boto3.client("dynamodb", region_name="us-east-1"), stack.table)
        for c in (svc.dynamodb, svc.sqs, svc.s3, svc.scheduler):
            meter.attach(c)
        from orbit.core.definition import parse_definition

        svc.engine.registry.register(parse_definition(QUICK))
        svc.engine.schedules.create({"id": "bench", "workflow": "bench-sched", "every": "1m",
                                     "overlap": "allow_all", "input": {"n": 1}})
        drain(svc, clients, stack)
        meter.reset()
        before = Counter()
        for _ in range(args.fires):
            clock.now += 60_000
            fire = {"kind": "schedule_fire", "execution_id": "schedule:bench", "id": f"fire:{clock.now}",
                    "schedule_id": "bench", "fire_at_ms": clock.now}
            svc.engine.handle_batch([fire])  # what the decider does with the delivered message
            drain(svc, clients, stack)  # the run's own decisions and its end notice
        requests = Counter(meter.requests) - before
        counts = svc.engine.schedules.describe("bench")["state"]["counts"]
        assert counts["started"] == args.fires, counts
        per = 1000 / args.fires
        print(f"{args.fires} schedule fires, each starting and completing a 1-step run; per 1,000 fires:")
        for op, n in sorted(requests.items()):
            print(f"  {n * per:8.0f}  {op}")
        # the decision-queue messages a fire and its run cost beyond what the meter saw (the mapping)
        sqs = meter.sqs_billed * PRICE["sqs"] / 1e6
        table = (meter.wru * PRICE["wru"] + meter.rru * PRICE["rru"]) / 1e6
        fires = args.fires * SCHEDULER_INVOCATION / 1e6
        total = (sqs + table + fires) * per
        print(f"  DynamoDB {meter.wru * per:.0f} WRU + {meter.rru * per:.0f} RRU = ${table * per:.4f}; "
              f"SQS sends ${sqs * per:.4f}; EventBridge Scheduler invocations ${fires * per:.4f}")
        print(f"  total ${total:.4f} per 1,000 fires (without the decider's Lambda time and the queue "
              "mapping's receives/deletes)")
        query_costs(svc, meter, args.queries)
        update_costs(svc, meter, clients, stack, args.updates)
        aws.reset()


def query_costs(svc, meter, n: int) -> None:
    from orbit.service.queries import run_query

    eid = svc.engine.schedules.describe("bench")["actions"][0]["execution_id"]
    svc.engine.registry.get("bench-sched")  # a warm API container has the definition cached
    meter.reset()
    for _ in range(n):
        assert run_query(svc.engine, eid, "answer") == {"n": 1}
    per = 1000 / n
    print(f"{n} queries of an ended run; per 1,000 queries:")
    for op, k in sorted(meter.requests.items()):
        print(f"  {k * per:8.0f}  {op}")
    table = (meter.wru * PRICE["wru"] + meter.rru * PRICE["rru"]) / 1e6 * per
    print(f"  DynamoDB {meter.wru * per:.0f} WRU + {meter.rru * per:.0f} RRU = ${table:.5f} "
          "per 1,000 queries (without the API function's Lambda time)")


def update_costs(svc, meter, clients, stack, n: int) -> None:
    import orbit
    from orbit.service.updates import outcome, submit

    @orbit.workflow("bench-updates", version="1")
    def counter(ctx, input):
        total = {"n": 0}

        def add(by):
            total["n"] += by
            return total["n"]

        ctx.update_handler("add", add, validator=lambda by: by > 0)
        ctx.wait_for("stop")
        return total

    svc.engine.registry.register(counter)
    eid = svc.engine.start("bench-updates", None, {}, "bench-updates-1")
    drain(svc, clients, stack)
    meter.reset()
    for i in range(n):
        uid = submit(svc.engine, eid, "add", 1, f"u-{i}")  # the API: validate, send
        drain(svc, clients, stack)  # the decider: record, run the handler, record its result
        assert outcome(svc.engine, eid, uid)["result"] == i + 1  # the caller reads the result
    per = 1000 / n
    print(f"{n} updates of a running code workflow; per 1,000 updates:")
    for op, k in sorted(meter.requests.items()):
        print(f"  {k * per:8.0f}  {op}")
    sqs = meter.sqs_billed * PRICE["sqs"] / 1e6 * per
    table = (meter.wru * PRICE["wru"] + meter.rru * PRICE["rru"]) / 1e6 * per
    print(f"  DynamoDB {meter.wru * per:.0f} WRU + {meter.rru * per:.0f} RRU = ${table:.5f}; SQS sends "
          f"${sqs:.5f}; total ${table + sqs:.5f} per 1,000 updates (without Lambda time and the queue "
          "mapping's receives/deletes; each further 200 ms a caller waits adds one Query)")


if __name__ == "__main__":
    main()
