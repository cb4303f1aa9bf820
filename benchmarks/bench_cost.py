"""What a step costs on AWS: every request the real handlers make, priced at us-east-1 list prices.

Runs N workflows of K sequential task steps on moto (in process) through the
real Lambda handlers (API start -> decider -> example-worker queue -> decider
...), counting every AWS request by service, operation and item kind with
botocore event hooks, and estimating DynamoDB capacity from the items
themselves (benchmarks/cost_meter.py; moto's ConsumedCapacity is a constant).
Then it measures what one decision reads on a cold cache at 10 and at 10,000
events of history.

    .venv/bin/python benchmarks/bench_cost.py [--workflows 20] [--steps 5] [--long 10000] [--no-dedupe]
        [--table-steps 1,3,5,10,20 | --no-table] [--no-extras]

Last (bench_cost_extras.py), one more run with the archive and two search attributes on prints
what retention, the archive and the attribute index add per execution.

After the detailed run it prints a compact table over workflow lengths K (one
full run of N workflows per K, benchmarks/cost_table.py) with the fixed
per-step floor and the per-execution overhead fitted to those runs.

What is counted as orchestration (the issue's "decider, queues, table"): the
table's items (commits, snapshots, index rows, timers, definitions), the worker
SDK's dedupe records (shown on their own line, near $0 here: since issue 15 a
short task on a first delivery reads and writes none, only long tasks, retries
and possible duplicates do; `@task(dedupe=False)` drops them all), every SQS
request (our sends, and the Lambda event source mapping's ReceiveMessage +
DeleteMessageBatch, one each per batch it delivers: those are
billed to the queue owner like any other request), S3, and the decider
Lambda. Not counted: the worker Lambda (the user's task code, billed with
Step Functions too), the API (one start request per execution; Step Functions
does not bill StartExecution either), the mapping's empty long polls on idle
queues and the timers function's once-a-minute tick (fixed monthly costs, not
per step).

Batching: the harness hands a function what is visible, up to 10 records, as
the mapping does under load. N concurrent workflows fill batches; with
--workflows 1 each batch holds one execution's messages (sparse traffic): the
average batch is printed, and the figure depends on it.

The decider Lambda's duration is a model, not a measurement: its own CPU time
here (thread time outside AWS calls) x CPU_SHARE (a 512 MB function gets about
512/1769 of a vCPU) + an assumed in-region latency per AWS request it makes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "integration"), str(ROOT), str(ROOT / "benchmarks")]
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

from cost_meter import Meter  # noqa: E402
from cost_table import Run, print_table  # noqa: E402

# us-east-1 list prices, on-demand, no free tier, $ per million (checked Nov 2026).
PRICE = {
    "wru": 0.625,  # DynamoDB on-demand write request unit (standard table class)
    "rru": 0.125,  # DynamoDB on-demand read request unit
    "sqs": 0.40,  # SQS standard queue request (per 64 KB chunk)
    "s3_put": 5.00,  # S3 Standard PUT
    "s3_get": 0.40,  # S3 Standard GET
    "lambda_req": 0.20,  # Lambda request
}
GB_SECOND = 0.0000133334  # Lambda arm64 duration, $ per GB-second
DECIDER_GB = 0.5  # template.yaml: MemorySize 512
CPU_SHARE = 512 / 1769  # Lambda gives one full vCPU at 1769 MB
LATENCY_MS = {"dynamodb": 6.0, "sqs": 12.0, "s3": 25.0}  # assumed per request, in-region
SFN_PER_MILLION = 25.0  # Step Functions Standard, $ per million state transitions
TARGET = 2.0


def cost(meter: Meter, invocations: Counter[str], decider_ms: float) -> dict[str, float]:
    esm_batches = sum(v for k, v in invocations.items() if k not in ("api", "timers"))
    esm = 2 * esm_batches  # the mapping's ReceiveMessage + DeleteMessageBatch per batch
    dedupe = meter.wru_by["worker dedupe"] * PRICE["wru"] + meter.rru_by["worker dedupe"] * PRICE["rru"]
    table = meter.wru * PRICE["wru"] + meter.rru * PRICE["rru"] - dedupe
    return {
        "table": table / 1e6,
        "worker dedupe": dedupe / 1e6,
        "sqs sends": meter.sqs_billed * PRICE["sqs"] / 1e6,
        "sqs mapping": esm * PRICE["sqs"] / 1e6,
        "s3": (
            meter.requests["s3:PutObject"] * PRICE["s3_put"]
            + meter.requests["s3:GetObject"] * PRICE["s3_get"]
        )
        / 1e6,
        "decider lambda": invocations["decider"] * PRICE["lambda_req"] / 1e6
        + decider_ms / 1000 * DECIDER_GB * GB_SECOND,
    }


class TimedCloud:
    """Wraps the harness's Cloud: counts records per batch and models each decider invocation's duration."""

    def __init__(self, cloud: Any, meter: Meter, cold: Any = None) -> None:
        self.cloud, self.meter, self.cold = cloud, meter, cold
        self.records: Counter[str] = Counter()
        self.decider_ms = 0.0
        self._invoke = cloud.invoke
        cloud.invoke = self.invoke

    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        self.records[function] += len(event.get("Records", [])) or 1
        if self.cold is not None and function == "decider":
            self.cold()  # this batch lands on a fresh decider instance: nothing cached
        cpu0, aws0, calls0 = time.thread_time(), self.meter.aws_cpu_s, Counter(self.meter.calls)
        try:
            return self._invoke(function, event)
        finally:
            if function == "decider":
                own_cpu = (time.thread_time() - cpu0) - (self.meter.aws_cpu_s - aws0)
                waits = sum(LATENCY_MS[s] * n for s, n in (self.meter.calls - calls0).items())
                self.decider_ms += math.ceil(own_cpu * 1000 / CPU_SHARE + waits)  # billed per 1 ms


def bench_definition(k: int, attributes: bool = False) -> dict[str, Any]:
    steps = {
        f"s{j}": {"task": "bench.step", "input": {"prev": f"{{% steps.s{j - 1}.output.n %}}" if j > 1 else 0}}
        for j in range(1, k + 1)
    }
    return {
        "orbit": 1,
        "name": "bench",
        "version": "1",
        "steps": steps,
        "output": f"{{% steps.s{k}.output %}}",
        # two search attributes: one known at the start, one set when the last step ends
        **({"attributes": {"customer": "{% execution.id %}", "last": f"{{% steps.s{k}.output.n %}}"}}
           if attributes else {}),
    }


def run_workflows(n: int, k: int, dedupe: bool = True, cold: bool = False, detail: bool = True,
                  extras: Any = None) -> Run:
    """Run the workflows and return what they cost; with `detail`, print the breakdown. `extras`
    (benchmarks/bench_cost_extras.py): the optional features on, their costs tagged and printed."""
    from aws_resources import mocked_services
    from harness import Cloud
    from orbit import worker

    @worker.task("bench.step", dedupe=dedupe)
    def step(input: Any, ctx: worker.TaskContext) -> dict[str, int]:
        return {"n": int(input.get("prev") or 0) + 1}

    # The harness's own clients (receive/delete) are not counted: modelled per batch.
    with mocked_services(extras.env if extras is not None else None) as (harness_clients, stack, svc):
        meter = Meter(harness_clients.dynamodb, stack.table)
        for client in (svc.dynamodb, svc.sqs, svc.s3):
            meter.attach(client)
        cloud = Cloud(stack, harness_clients.sqs)
        cloud.api("POST", "/definitions", bench_definition(k, attributes=extras is not None))
        # The engine's per-process state cache (service.Engine._cache, read-only use here): with
        # --cold every decider batch starts without it, as on a fleet of decider instances.
        timed = TimedCloud(cloud, meter, svc.engine._cache.clear if cold else None)
        retire = svc.engine._retire

        def tagged_retire(*args: Any) -> None:  # what retention costs: the expiry an ended execution gets
            meter.tag = "retention"
            try:
                retire(*args)
            finally:
                meter.tag = None

        svc.engine._retire = tagged_retire
        if extras is not None:
            extras.setup(svc, meter)
        meter.reset()
        cloud.invocations.clear()
        started = time.perf_counter()
        emf = io.StringIO()  # powertools prints EMF metric lines to stdout: keep them out of the report
        with contextlib.redirect_stdout(emf):
            for i in range(n):
                status, body = cloud.api(
                    "POST", "/executions", {"workflow": "bench", "id": f"b-{i}", "input": {}}
                )
                assert status == 201, body
            cloud.run_until_idle(max_rounds=10_000)
        elapsed = time.perf_counter() - started
        for client in (svc.dynamodb, svc.sqs, svc.s3):
            meter.detach(client)  # the checks below are the benchmark's, not the workflows'
        done = [svc.engine.describe(f"b-{i}") for i in range(n)]
        assert all(d["status"] == "COMPLETED" and d["output"] == {"n": k} for d in done), done[0]
        run = measure(meter, timed, n, k)
        if detail:
            report(meter, timed, n, k, dedupe, elapsed, cold)
        if extras is not None:
            extras.report(meter, harness_clients, stack, n)
    return run


def is_dedupe(operation: str) -> bool:
    return operation.endswith("worker dedupe") or "worker dedupe (" in operation


def measure(meter: Meter, timed: TimedCloud, n: int, k: int) -> Run:
    """The run's totals, the worker SDK's dedupe records apart from the rest of the orchestration."""
    inv = Counter(timed.cloud.invocations)
    c = cost(meter, inv, timed.decider_ms)
    esm = 2 * sum(v for f, v in inv.items() if f not in ("api", "timers"))
    dedupe_requests = sum(v for op, v in meter.requests.items() if is_dedupe(op))
    return Run(
        workflows=n,
        steps_each=k,
        requests=sum(meter.requests.values()) - dedupe_requests + esm,
        wru=meter.wru - meter.wru_by["worker dedupe"],
        rru=meter.rru - meter.rru_by["worker dedupe"],
        dollars=sum(c.values()) - c["worker dedupe"],
        dedupe_requests=dedupe_requests,
        dedupe_wru=meter.wru_by["worker dedupe"],
        dedupe_rru=meter.rru_by["worker dedupe"],
        dedupe_dollars=c["worker dedupe"],
    )


def report(meter: Meter, timed: TimedCloud, n: int, k: int, dedupe: bool, elapsed: float, cold: bool) -> None:
    steps = n * k
    inv = Counter(timed.cloud.invocations)
    c = cost(meter, inv, timed.decider_ms)
    print(
        f"\n== {n} workflows x {k} steps = {steps} steps through the handlers on moto ({elapsed:.1f} s wall; "
        f"worker dedupe {'on' if dedupe else 'off: @task(dedupe=False)'}; decider cache "
        f"{'cold: every batch loads' if cold else 'warm: one process, as one busy decider instance'})"
    )
    print("requests by operation and item (count, per step):")
    for op, count in sorted(meter.requests.items()):
        print(f"  {op:48s} {count:6d} {count / steps:6.2f}")
    esm = 2 * sum(v for f, v in inv.items() if f not in ("api", "timers"))
    print(f"  {'sqs: event source mapping receive + delete':48s} {esm:6d} {esm / steps:6.2f}")
    batches = ", ".join(f"{f} {inv[f]} ({timed.records[f] / inv[f]:.1f} records each)" for f in sorted(inv))
    print(f"lambda invocations: {batches}")
    print(
        f"DynamoDB (estimated from item bytes), per step: {meter.wru / steps:.2f} WRU ("
        + ", ".join(f"{kind} {v / steps:.2f}" for kind, v in meter.wru_by.most_common())
        + f"), {meter.rru / steps:.2f} RRU ("
        + ", ".join(f"{kind} {v / steps:.2f}" for kind, v in meter.rru_by.most_common())
        + ")"
    )
    per_inv = timed.decider_ms / max(1, inv["decider"])
    print(f"decider Lambda: modelled {per_inv:.0f} ms per invocation at 512 MB (see the module docstring)")
    print(
        f"$ per million steps at us-east-1 list prices (per million: WRU ${PRICE['wru']}, "
        f"RRU ${PRICE['rru']}, SQS request ${PRICE['sqs']}, Lambda request ${PRICE['lambda_req']}; "
        f"Lambda ${GB_SECOND:.10f} per GB-s arm64; "
        f"S3 PUT ${PRICE['s3_put']} / GET ${PRICE['s3_get']}):"
    )
    for name, value in c.items():
        print(f"  {name:16s} ${value / steps * 1e6:6.2f}")
    total = sum(c.values()) / steps * 1e6
    without = total - c["worker dedupe"] / steps * 1e6
    # One transition per Task state entered (the floor: a start/end or a retry would add more).
    sfn = SFN_PER_MILLION
    lines = [("orchestration (decider, queues, table) without the worker SDK's dedupe records", without)]
    if dedupe:
        lines.append(("the same plus the dedupe records the worker SDK writes into that table", total))
    for label, dollars in lines:
        verdict = "meets" if dollars <= TARGET else "misses"
        print(f"  ${dollars:6.2f}  {label}: {verdict} the ${TARGET:.2f} target, {dollars / sfn:.0%} of SFN")
    wru, rru = meter.tagged_wru["retention"], meter.tagged_rru["retention"]
    print(
        f"  of which retention at the end (young ends: their items were written with the expiry their "
        f"start recorded; a timer is disarmed only if one may have been armed), per execution: "
        f"{meter.tagged_requests['retention'] / n:.1f} requests, {wru / n:.2f} WRU, {rru / n:.2f} RRU = "
        f"${(wru * PRICE['wru'] + rru * PRICE['rru']) / n:.2f} per million executions "
        f"(${(wru * PRICE['wru'] + rru * PRICE['rru']) / steps:.2f} per million steps)"
    )
    print(
        f"  ${sfn:6.2f}  Step Functions Standard (${SFN_PER_MILLION:.0f} per million state transitions, "
        "at least one per step)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workflows", type=int, default=20)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--long", type=int, default=10_000, help="events of the long history (0: skip)")
    ap.add_argument("--no-dedupe", action="store_true", help="register the bench task with dedupe=False")
    ap.add_argument(
        "--cold", action="store_true", help="every decider batch starts with an empty state cache"
    )
    ap.add_argument(
        "--table",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="after the detailed run, one run per length of --table-steps and the fitted floor",
    )
    ap.add_argument("--table-steps", default="1,3,5,10,20", help="workflow lengths K of the table")
    ap.add_argument("--extras", action=argparse.BooleanOptionalAction, default=True,
                    help="one more run with the archive and two search attributes on: what each adds")
    args = ap.parse_args()
    try:
        lengths = sorted({int(k) for k in args.table_steps.split(",")})
    except ValueError:
        ap.error(f"--table-steps: comma-separated whole numbers, got {args.table_steps!r}")
    if any(k < 1 for k in lengths):
        ap.error(f"--table-steps: every length must be at least 1, got {args.table_steps!r}")
    import logging
    import warnings

    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    detailed = run_workflows(args.workflows, args.steps, dedupe=not args.no_dedupe, cold=args.cold)
    if args.table:
        runs = [
            detailed
            if k == args.steps
            else run_workflows(args.workflows, k, dedupe=not args.no_dedupe, cold=args.cold, detail=False)
            for k in lengths
        ]
        print_table(runs, TARGET, SFN_PER_MILLION, dedupe=not args.no_dedupe)
    if args.extras:
        from bench_cost_extras import Extras

        run_workflows(args.workflows, args.steps, dedupe=not args.no_dedupe, detail=False, extras=Extras())
    if args.long:
        from cold_reads import reads_per_decision

        reads_per_decision(args.long)


if __name__ == "__main__":
    main()
