"""A 3-step durable function (AWS's durable execution SDK, benchmarks/durable_3step.py) per
execution: on Orbit's durable endpoint (`orbit.local.durable_server`: the SDK's own boto3 client
checkpointing over HTTP to Orbit, a synchronous Invoke per execution, the history on Orbit's
store) against AWS's local test runner (aws-durable-execution-sdk-python-testing 1.4.0, in-memory
service client, no HTTP) in the same run on the same machine.

    python benchmarks/bench_durable.py [--n 100] [--concurrent 64] [--cost 20]

The AWS runner runs in .venv-conformance (`make conformance` creates it), twice: with its default
poll_interval (1.0 s) and tuned to 0.001 s. Prints one line per backend and the ratios; then
`--concurrent` executions at once on each (16 callers on Orbit, `run_async` on AWS's runner),
wall time per execution. Last, `--cost` executions through Orbit's AWS path on the local stack
(benchmarks/durable_aws_cost.py, its own process): $ per 1M checkpointed steps, counted as for
other steps, next to Lambda durable functions' list price (0: skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PEER_VENV = ROOT / ".venv-conformance"

PEER = """
import json, sys, time
sys.path.insert(0, {here!r})
from aws_durable_execution_sdk_python_testing import DurableFunctionTestRunner
from durable_3step import handler
n, poll = int(sys.argv[1]), float(sys.argv[2])
times = []
with DurableFunctionTestRunner(handler=handler, poll_interval=poll) as runner:
    runner.run(input=json.dumps({{"x": -1}}), execution_name="warm")
    for i in range(n):
        t = time.perf_counter()
        r = runner.run(input=json.dumps({{"x": i}}), execution_name=f"e{{i}}")
        times.append(time.perf_counter() - t)
        assert str(r.status).endswith("SUCCEEDED"), r.status
        assert json.loads(r.result) == (i + 1) * 2 - 3
print(json.dumps(times))
"""

PEER_CONCURRENT = """
import json, sys, time
sys.path.insert(0, {here!r})
from aws_durable_execution_sdk_python_testing import DurableFunctionTestRunner
from durable_3step import handler
n = int(sys.argv[1])
with DurableFunctionTestRunner(handler=handler) as runner:
    runner.run(input=json.dumps({{"x": -1}}), execution_name="warm")
    t = time.perf_counter()
    arns = [runner.run_async(input=json.dumps({{"x": i}}), execution_name=f"e{{i}}") for i in range(n)]
    results = [runner.wait_for_result(execution_arn=a, timeout=300) for a in arns]
    elapsed = time.perf_counter() - t
    assert all(str(r.status).endswith("SUCCEEDED") for r in results)
print(json.dumps(elapsed))
"""


def orbit_concurrent(client: Any, n: int) -> float:
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int) -> None:
        r = client.invoke(FunctionName="three-steps", Payload=json.dumps({"x": i}))
        assert json.loads(r["Payload"].read()) == (i + 1) * 2 - 3

    t = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(n)))
    return time.perf_counter() - t


def orbit(client: Any, n: int) -> list[float]:
    client.invoke(FunctionName="three-steps", Payload=json.dumps({"x": -1}))  # warm: imports, connections
    times = []
    for i in range(n):
        t = time.perf_counter()
        r = client.invoke(FunctionName="three-steps", Payload=json.dumps({"x": i}))
        times.append(time.perf_counter() - t)
        assert json.loads(r["Payload"].read()) == (i + 1) * 2 - 3
    return times


def peer(n: int, poll: float) -> list[float] | None:
    py = PEER_VENV / "bin" / "python"
    if not py.exists():
        print(f"  (AWS local runner not installed: run `make conformance` to create {PEER_VENV})")
        return None
    out = subprocess.run(
        [str(py), "-c", PEER.format(here=str(HERE)), str(n), str(poll)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if out.returncode != 0:
        print(f"  (AWS local runner failed: {out.stderr.strip().splitlines()[-1:]})")
        return None
    times: list[float] = json.loads(out.stdout.strip().splitlines()[-1])
    return times


def peer_concurrent(n: int) -> float | None:
    py = PEER_VENV / "bin" / "python"
    if not py.exists():
        return None
    out = subprocess.run(
        [str(py), "-c", PEER_CONCURRENT.format(here=str(HERE)), str(n)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if out.returncode != 0:
        print(f"  (AWS local runner failed: {out.stderr.strip().splitlines()[-1:]})")
        return None
    return float(out.stdout.strip().splitlines()[-1])


def line(name: str, times: list[float]) -> float:
    mean = statistics.mean(times)
    p50 = statistics.median(times)
    p95 = sorted(times)[int(len(times) * 0.95) - 1]
    print(f"{name:<48} mean {mean * 1000:8.1f} ms   p50 {p50 * 1000:8.1f} ms   p95 {p95 * 1000:8.1f} ms")
    return mean


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--concurrent", type=int, default=64)
    ap.add_argument("--cost", type=int, default=20, help="executions for the AWS path's cost (0: none)")
    a = ap.parse_args()
    import boto3
    from botocore.config import Config

    sys.path.insert(0, str(HERE))
    from orbit.local.durable_server import serve

    server, endpoint = serve(0)  # one endpoint for the run: the SDK keeps its client per process
    endpoint.register({"name": "three-steps", "language": "python", "handler": "durable_3step.handler"})
    client = boto3.client(
        "lambda",
        region_name="us-east-1",
        endpoint_url=os.environ["AWS_ENDPOINT_URL_LAMBDA"],
        config=Config(max_pool_connections=32),
    )
    print(f"3-step durable function, {a.n} executions one after another, per execution:")
    ours = line("Orbit durable endpoint (SDK over HTTP)", orbit(client, a.n))
    for poll, label in (
        (1.0, "AWS local runner, default poll_interval=1.0"),
        (0.001, "AWS local runner, poll_interval=0.001"),
    ):
        times = peer(a.n, poll)
        if times:
            theirs = line(label, times)
            print(f"{'':<48} Orbit is {theirs / ours:.1f}x faster per execution")
    if a.concurrent:
        print(f"{a.concurrent} executions at once, wall time per execution:")
        ours_c = orbit_concurrent(client, a.concurrent) / a.concurrent
        print(f"{'Orbit durable endpoint, 16 callers':<48} {ours_c * 1000:8.1f} ms")
        theirs_c = peer_concurrent(a.concurrent)
        if theirs_c is not None:
            theirs_c /= a.concurrent
            print(f"{'AWS local runner, run_async':<48} {theirs_c * 1000:8.1f} ms")
            print(f"{'':<48} Orbit is {theirs_c / ours_c:.1f}x faster per execution")
    server.shutdown()
    endpoint.runtime.close()
    if endpoint.logs is not None:
        endpoint.logs.uninstall()
    if a.cost:
        subprocess.run([sys.executable, str(HERE / "durable_aws_cost.py"), "--n", str(a.cost)], check=True)


if __name__ == "__main__":
    main()
