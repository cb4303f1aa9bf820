"""Inline steps against worker-queue steps: every figure of issue 15's target table, in one run.

    .venv/bin/python benchmarks/bench_inline.py [--workflows 20] [--n 200] [--memory 512] [--no-peers]

Costs come from counted AWS requests: the real handlers (API -> decider -> worker -> decider) run
on moto in process and every request they make is counted and priced at us-east-1 list prices by
benchmarks/cost_meter.py and benchmarks/bench_cost.py (the same rules as `bench_cost.py`: DynamoDB
units from item bytes, SQS per request and 64 KB chunk plus the event source mapping's receive +
delete per batch, S3, and the decider Lambda: requests + GB-seconds at --memory MB, duration
modelled from its own CPU time and an assumed in-region latency per AWS request). With inline
steps the task code runs inside the decider, so its (tiny) CPU time is in the decider's GB-s.

"Steady state" figures are marginal: the difference between runs of 20-step and 10-step
workflows, divided by the 10 extra steps per workflow, so the per-execution part (start, index
row, the hand-over from the API to the decider, the end) is left out; the per-step average over a
10-step workflow (which includes it) is printed beside it.

Throughput: 200 executions of the 3-step workflow of bench_local.py on the local stack with
in-process moto, inline and worker steps, next to DBOS on SQLite (benchmarks/peers, installed
into /tmp/orbit-bench-peers). Latency: p50/p99 of a 10-step inline workflow on the local stack,
from the start call to a describe that reads COMPLETED, one execution at a time (the local stack,
like a decider, runs the inline chain inside the call that decided the start). The AWS requests per
workflow of the throughput set-up are counted in runs of their own; the load average printed beside
the figures says how busy the machine was (throughput is wall time).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import statistics
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]
import bench_cost  # noqa: E402  (sets the environment moto needs, and the prices)
import bench_local  # noqa: E402
from cost_meter import Meter  # noqa: E402

WRITE_OPS = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")


@dataclass
class Counted:
    steps: int
    dollars: float
    sqs: int  # SQS requests: sends + the event source mapping's receive/delete per batch
    writes: int  # DynamoDB write requests
    wru: float
    requests: int
    by_op: Counter[str] | None = None


def chain(k: int, inline: bool, name: str) -> dict[str, Any]:
    steps = {}
    for j in range(1, k + 1):
        prev = f"{{% steps.s{j - 1}.output.n %}}" if j > 1 else 0
        extra = {"inline": True} if inline else {}
        steps[f"s{j}"] = {"task": "bench.step", "input": {"prev": prev}, **extra}
    return {"orbit": 1, "name": name, "version": "1", "steps": steps, "output": f"{{% steps.s{k}.output %}}"}


def counted(n: int, k: int, inline: bool) -> Counted:
    """n workflows of k steps through the real handlers on moto, every AWS request counted."""
    from aws_resources import mocked_services
    from harness import Cloud
    from orbit import worker

    worker.task("bench.step")(lambda inp, ctx: {"n": int(inp.get("prev") or 0) + 1})
    with mocked_services() as (harness_clients, stack, svc):
        meter = Meter(harness_clients.dynamodb, stack.table)
        for client in (svc.dynamodb, svc.sqs, svc.s3):
            meter.attach(client)
        cloud = Cloud(stack, harness_clients.sqs)
        cloud.api("POST", "/definitions", chain(k, inline, "bench"))
        timed = bench_cost.TimedCloud(cloud, meter)
        meter.reset()
        cloud.invocations.clear()
        with contextlib.redirect_stdout(io.StringIO()):
            for i in range(n):
                req = {"workflow": "bench", "id": f"b-{i}", "input": {}}
                status, body = cloud.api("POST", "/executions", req)
                assert status == 201, body
            cloud.run_until_idle(max_rounds=10_000)
        for client in (svc.dynamodb, svc.sqs, svc.s3):
            meter.detach(client)
        done = [svc.engine.describe(f"b-{i}") for i in range(n)]
        late = [d for d in done if d["status"] != "COMPLETED" or d["output"] != {"n": k}]
        assert not late, late[0]
        inv = Counter(timed.cloud.invocations)
        dollars = sum(bench_cost.cost(meter, inv, timed.decider_ms).values())
        esm = 2 * sum(v for f, v in inv.items() if f not in ("api", "timers"))
        sqs = sum(v for op, v in meter.requests.items() if op.startswith("sqs:")) + esm
        writes = sum(v for op, v in meter.requests.items()
                     if op.startswith("dynamodb:") and op.split(":")[1].split(" ")[0] in WRITE_OPS)
        return Counted(n * k, dollars, sqs, writes, meter.wru, sum(meter.requests.values()) + esm,
                       Counter(meter.requests))


def local_latencies(n: int, k: int) -> list[float]:
    from orbit.local import LocalStack
    from orbit.worker import task

    task("bench.step")(lambda inp, ctx: {"n": int(inp.get("prev") or 0) + 1})
    out = []
    with LocalStack(mode="inprocess") as stack:
        stack.register(chain(k, True, "bench-latency"))
        for i in range(n):
            t = time.perf_counter()
            eid = stack.start("bench-latency", {}, f"lat-{i}")  # the local stack runs the chain here
            if stack.describe(eid)["status"] != "COMPLETED":
                stack.run_until_done(eid, wall_timeout_s=60)
            out.append((time.perf_counter() - t) * 1000)
            assert stack.describe(eid)["status"] == "COMPLETED"
    return out


def three_steps(inline: bool) -> dict[str, Any]:
    d = bench_local.DEFINITION
    return {**d, "steps": {s: {**b, **({"inline": True} if inline else {})} for s, b in d["steps"].items()}}


def throughput(n: int, inline: bool) -> float:
    d = bench_local.DEFINITION
    bench_local.DEFINITION = three_steps(inline)
    try:
        return n / bench_local.run_orbit(n, "inprocess")
    finally:
        bench_local.DEFINITION = d


def calls_per_workflow(n: int, inline: bool) -> float:
    """AWS requests per workflow of the throughput run's set-up (the pump's receives and deletes
    included), counted in a run of its own (bench_requests.py) so that counting costs the timed
    runs nothing."""
    import bench_requests

    return sum(bench_requests.count(inline, n).values()) / n


def row(label: str, value: str, target: str, ok: bool | None) -> None:
    verdict = "" if ok is None else ("meets" if ok else "MISSES")
    print(f"  {label:<70} {value:>14}  {target:<26} {verdict}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workflows", type=int, default=20, help="workflows per cost run")
    ap.add_argument("--n", type=int, default=200, help="executions of the throughput and latency runs")
    ap.add_argument("--memory", type=int, default=512, help="the decider's MemorySize (MB) for its GB-s")
    ap.add_argument("--no-peers", action="store_true", help="skip DBOS (no install)")
    ap.add_argument("--no-costs", action="store_true", help="only the local throughput and latency rows")
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    bench_cost.DECIDER_GB = args.memory / 1024
    bench_cost.CPU_SHARE = min(1.0, args.memory / 1769)
    n = args.workflows

    if not args.no_costs:
        inline10, inline20 = counted(n, 10, True), counted(n, 20, True)
        worker5 = counted(n, 5, False)
        worker10, worker20 = counted(n, 10, False), counted(n, 20, False)

    bench_local.register_tasks()
    load_before = os.getloadavg()
    rates = {"inline": throughput(args.n, True), "worker": throughput(args.n, False)}
    calls = {"inline": calls_per_workflow(args.n, True), "worker": calls_per_workflow(args.n, False)}
    dbos: float | None = None
    why = "skipped (--no-peers)"
    if not args.no_peers:
        problem = bench_local.ensure_peers()
        out = bench_local.run_peer("dbos_3step.py", args.n) if problem is None else f"skipped ({problem})"
        if isinstance(out, dict):
            dbos = out["n"] / out["seconds"]
        else:
            why = str(out)
    load_after = os.getloadavg()
    lat = sorted(local_latencies(args.n, 10))
    p50, p99 = statistics.median(lat), lat[min(len(lat) - 1, int(0.99 * len(lat)))]

    print(f"\nissue 15 targets: {n} workflows per cost run on moto (handlers counted), decider "
          f"{args.memory} MB, us-east-1 list prices; load average (1 min) {load_before[0]:.2f} before the "
          f"throughput runs, {load_after[0]:.2f} after them ({os.cpu_count()} CPUs)\n")
    print(f"  {'figure':<70} {'measured':>14}  {'target':<26}")
    if not args.no_costs:
        cost_rows(inline10, inline20, worker5, worker10, worker20)
    local_rows(rates, calls, dbos, why, lat, p50, p99)


def cost_rows(inline10: Counted, inline20: Counted, worker5: Counted, worker10: Counted,
              worker20: Counted) -> None:
    def marginal(a: Counted, b: Counted, field: str) -> float:
        return (getattr(b, field) - getattr(a, field)) / (b.steps - a.steps)

    per_m = 1e6
    v = inline10.dollars / inline10.steps * per_m
    row("inline steps: $ per 1M steps, 10-step workflows", f"${v:.2f}", "<= $1.00", v <= 1.0)
    v = marginal(inline10, inline20, "dollars") * per_m
    row("  (steady state, marginal step)", f"${v:.2f}", "", None)
    v = marginal(inline10, inline20, "sqs")
    row("inline steps: SQS messages per step, steady state", f"{v:.2f}", "0", abs(v) < 1e-9)
    row("  (average over a 10-step workflow, hand-over from the API included)",
        f"{inline10.sqs / inline10.steps:.2f}", "", None)
    v = marginal(inline10, inline20, "writes")
    row("inline steps: DynamoDB writes per step (steady state)", f"{v:.2f}", "<= 1", v <= 1.0)
    row("  (average over a 10-step workflow: start, index row, retention included)",
        f"{inline10.writes / inline10.steps:.2f}", "", None)
    row("  (WRU per step, steady state)", f"{marginal(inline10, inline20, 'wru'):.2f}", "", None)
    v = worker5.dollars / worker5.steps * per_m
    row("worker-queue steps: $ per 1M steps, 5-step, everything (dedupe incl.)", f"${v:.2f}",
        "<= $2.00 (~$2.15 before)", v <= 2.0)
    row("  (worker steps, steady state, marginal step)",
        f"${marginal(worker10, worker20, 'dollars') * per_m:.2f}", "", None)
    inline_trips = marginal(inline10, inline20, "requests")
    row("step latency model: sequential AWS round trips per step, inline",
        f"{inline_trips:.2f} (~{6 * inline_trips:.0f} ms)", "printed", None)


def local_rows(rates: dict[str, float], calls: dict[str, float], dbos: float | None, why: str,
               lat: list[float], p50: float, p99: float) -> None:
    if dbos is not None:
        row(f"local throughput, 3-step x {len(lat)}, in-process moto, inline (wf/s vs DBOS)",
            f"{rates['inline']:.0f} = {rates['inline'] / dbos:.2f}x", f">= 2x DBOS ({dbos:.0f}/s)",
            rates["inline"] >= 2 * dbos)
        row("local throughput, same set-up, worker steps (wf/s vs DBOS)",
            f"{rates['worker']:.0f} = {rates['worker'] / dbos:.2f}x", ">= 1x DBOS (0.62x before)",
            rates["worker"] >= dbos)
    else:
        row(f"local throughput, 3-step x {len(lat)}, in-process moto, inline (wf/s)",
            f"{rates['inline']:.0f}", f">= 2x DBOS: {why}", None)
        row("local throughput, same set-up, worker steps (wf/s)", f"{rates['worker']:.0f}",
            f">= 1x DBOS: {why}", None)
    row("  (AWS requests per workflow in that set-up: inline / worker steps)",
        f"{calls['inline']:.1f} / {calls['worker']:.1f}", "", None)
    # A worker step's critical path: the decider's commit, SendMessage to the task queue, the event
    # source mapping's receive, SendMessage of the answer, the mapping's receive for the decider
    # (deletes happen after the handlers return). A short task on a first delivery reads and writes
    # no dedupe record (worker/dedupe.py); before issue 15 it added a GetItem and a PutItem.
    worker_path = ["commit PutItem", "task SendMessage", "ESM ReceiveMessage", "result SendMessage",
                   "ESM ReceiveMessage"]
    lat_ms = {"commit PutItem": 6}
    worker_ms = sum(lat_ms.get(s, 12) for s in worker_path)
    row("step latency model: sequential AWS round trips per step, worker",
        f"{len(worker_path)} (~{worker_ms} ms)", "printed", None)
    print(f"      worker path: {' -> '.join(worker_path)} (+ Lambda poll/invoke delays)")
    row(f"p50 / p99 of a 10-step inline workflow, local stack ({len(lat)} runs)",
        f"{p50:.1f} / {p99:.1f} ms", "printed", None)


if __name__ == "__main__":
    main()
