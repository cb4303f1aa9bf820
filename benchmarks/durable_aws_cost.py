"""$ per 1M checkpointed steps on Orbit's AWS path of durable functions, counted as bench_cost.py
counts other steps: N executions of the 3-step function (benchmarks/durable_3step.py) run through
the AWS path on the local stack (moto in process, orbit/local/durable_aws.py: the decider invokes
the function asynchronously through its Lambda adapter, the unmodified SDK checkpoints to the
durable API behind the function URL, Lambda's destination sends the invocation's record to the
answer queue), every request Orbit's handlers make to DynamoDB, SQS and S3 counted and priced
at us-east-1 list prices (benchmarks/cost_meter.py), plus:

- the durable API function (behind the URL): one Lambda request per SDK call (checkpoint, state),
  its duration modelled as bench_cost.py models the decider's (own CPU x CPU share + an assumed
  in-region latency per AWS request);
- the decider: one Lambda request per durable message and per invocation record, its wall time
  handling each (it no longer includes the durable function's run: the invoke is queued);
- the destination's SendMessage of each record to the answer queue (billed to the account);
- the two queues' event source mappings: a ReceiveMessage and a DeleteMessageBatch per message
  (each execution's messages come one at a time);
- the timer messages each execution leaves in flight (its start's 30 s check), delivered and
  dropped after it ended (virtual time moves on 901 s).

Not counted, as for worker steps: the durable function's own Lambda (the user's code; billed on
Lambda's managed service too). Compared with Lambda durable functions' list price for durable
operations (DURABLE_OPS_PER_MILLION; data written and retained are billed on top there).

    python benchmarks/durable_aws_cost.py [--n 20]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT / "tests" / "e2e")]

# Lambda durable functions, durable operations, us-east-1: "$8.00/M" (aws.amazon.com/lambda/pricing/,
# as transcribed 2026-09-20 in api-evangelist/aws-lambda plans/aws-lambda-plans-pricing.yml, an
# example rate; data written and data retained are billed on top). A checkpointed step is at least
# one durable operation.
DURABLE_OPS_PER_MILLION = 8.00
DURABLE_PRICE_SOURCE = ("aws.amazon.com/lambda/pricing (durable operations, us-east-1; "
                        "as transcribed 2026-09-20)")
STEPS_PER_EXECUTION = 3


def measure(n: int = 20) -> dict[str, float]:
    """Run `n` executions on the AWS path; returns $ per 1M checkpointed steps by component."""
    import boto3
    from bench_cost import CPU_SHARE, DECIDER_GB, GB_SECOND, LATENCY_MS, PRICE
    from cost_meter import Meter
    from orbit.local.stack import LocalStack

    counts = {"api": 0, "decider": 0, "records": 0}
    ms = {"api": 0.0, "decider": 0.0, "records": 0.0}
    with contextlib.redirect_stdout(io.StringIO()), LocalStack(mode="inprocess") as stack:
        aws = stack.durable()
        name = aws.register("three-steps", "durable_3step.handler")
        svc = stack.services
        meter = Meter(boto3.client("dynamodb"), svc.settings.table)
        for client in (svc.dynamodb, svc.sqs, svc.s3):
            meter.attach(client)
        api = stack.cloud.handlers["DurableApiFunction"]

        def timed_api(event: Any, context: Any) -> Any:
            cpu0, aws0, calls0 = time.thread_time(), meter.aws_cpu_s, dict(meter.calls)
            try:
                return api(event, context)
            finally:
                own = (time.thread_time() - cpu0) - (meter.aws_cpu_s - aws0)
                waits = sum(LATENCY_MS.get(s, 10.0) * (k - calls0.get(s, 0)) for s, k in meter.calls.items())
                counts["api"] += 1
                ms["api"] += math.ceil(own * 1000 / CPU_SHARE + waits)

        stack.cloud.handlers["DurableApiFunction"] = timed_api
        handle = svc.durable.handle

        def timed_handle(body: dict[str, Any], received: int = 1) -> None:
            t = time.perf_counter()
            try:
                handle(body, received)
            finally:
                counts["decider"] += 1
                ms["decider"] += math.ceil((time.perf_counter() - t) * 1000)

        svc.durable.handle = timed_handle
        from orbit.aws import durable_answers

        answer = durable_answers.handle_answer

        def timed_answer(durable: Any, body: Any, received: int = 1) -> bool:
            t = time.perf_counter()
            try:
                return answer(durable, body, received)
            finally:
                counts["decider"] += 1
                counts["records"] += 1
                ms["decider"] += math.ceil((time.perf_counter() - t) * 1000)

        durable_answers.handle_answer = timed_answer  # type: ignore[assignment]
        client = boto3.client("lambda", region_name="us-east-1", endpoint_url=aws.url)
        client.invoke(FunctionName=name, InvocationType="Event", Payload=b'{"x": 0}')  # warm
        stack.run_until_idle()
        meter.reset()
        for k in counts:
            counts[k], ms[k] = 0, 0.0
        for i in range(n):
            client.invoke(FunctionName=name, InvocationType="Event", Payload=f'{{"x": {i}}}'.encode())
        stack.run_until_idle()
        # the timer messages still in flight (a start's 30 s check, any chain still hopping)
        # are delivered and dropped: their receive, decider invocation and history read count too
        stack.advance(901)
        stack.run_until_idle()
        for i, s in enumerate(svc.durable.service.list_executions(name)):
            assert s.status == "SUCCEEDED", (i, s.status, s.error)
    steps = n * STEPS_PER_EXECUTION
    per = 1e6 / steps
    out = {
        "table": (meter.wru * PRICE["wru"] + meter.rru * PRICE["rru"]) / 1e6 * per,
        "sqs sends": (meter.sqs_billed + counts["records"]) * PRICE["sqs"] / 1e6 * per,
        "sqs mapping": 2 * counts["decider"] * PRICE["sqs"] / 1e6 * per,
        "s3": (meter.requests["s3:PutObject"] * PRICE["s3_put"]
               + meter.requests["s3:GetObject"] * PRICE["s3_get"]) / 1e6 * per,
        "durable api lambda": (counts["api"] * PRICE["lambda_req"] / 1e6
                               + ms["api"] / 1000 * DECIDER_GB * GB_SECOND) * per,
        "decider lambda (durable messages and records)": (
            counts["decider"] * PRICE["lambda_req"] / 1e6
            + ms["decider"] / 1000 * DECIDER_GB * GB_SECOND) * per,
    }
    out["total"] = sum(out.values())
    out["api requests per step"] = counts["api"] / steps
    out["decider messages per step"] = counts["decider"] / steps
    out["records per step"] = counts["records"] / steps
    out["decider ms per message"] = ms["decider"] / max(1, counts["decider"])
    return out


def report(n: int) -> None:
    got = measure(n)
    print(f"Orbit's AWS path, $ per 1M checkpointed steps ({n} executions x {STEPS_PER_EXECUTION} steps, "
          "us-east-1 list prices, moto in process):")
    for k, v in got.items():
        if k.endswith("per step") or k.endswith("per message"):
            continue
        print(f"  {k:<52} ${v:8.2f}")
    print(f"  ({got['api requests per step']:.2f} durable API requests and "
          f"{got['decider messages per step']:.2f} decider messages per step, of which "
          f"{got['records per step']:.2f} invocation records; "
          f"the decider takes {got['decider ms per message']:.0f} ms per message)")
    print(f"  Lambda durable functions, list price per 1M durable operations  ${DURABLE_OPS_PER_MILLION:8.2f}"
          f"  (source: {DURABLE_PRICE_SOURCE})")


if __name__ == "__main__":
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20)
    report(ap.parse_args().n)
