"""The benchmark's 3-step workflow on the AWS durable execution SDK's local test runner.

Prints JSON {n, seconds}. Run with the peers venv: python durable_sdk_3step.py N
"""

import json
import sys
import time

from aws_durable_execution_sdk_python.context import durable_step
from aws_durable_execution_sdk_python.execution import durable_execution
from aws_durable_execution_sdk_python_testing import DurableFunctionTestRunner

N = int(sys.argv[1])


@durable_step
def step_a(ctx, x: int) -> int:
    return x + 1


@durable_step
def step_b(ctx, x: int) -> int:
    return x * 2


@durable_step
def step_c(ctx, x: int) -> int:
    return x - 3


@durable_execution
def handler(event, context):
    x = event["x"]
    return context.step(step_c(context.step(step_b(context.step(step_a(x))))))


with DurableFunctionTestRunner(handler=handler, poll_interval=0.001) as runner:
    started = time.perf_counter()
    results = [runner.run(input=json.dumps({"x": i}), execution_name=f"e{i}") for i in range(N)]
    elapsed = time.perf_counter() - started
bad = [r for r in results if str(r.status).split(".")[-1] != "SUCCEEDED"]
assert not bad, f"{len(bad)} executions did not succeed: {bad[0].status}"
print(json.dumps({"n": N, "seconds": elapsed}))
