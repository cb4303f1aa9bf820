"""The 3-step durable function of benchmarks/bench_durable.py, written with AWS's durable execution
SDK: the same handler runs on Orbit's durable endpoint and on AWS's local test runner."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution, durable_step


@durable_step
def step_a(ctx: StepContext, x: int) -> int:
    return x + 1


@durable_step
def step_b(ctx: StepContext, x: int) -> int:
    return x * 2


@durable_step
def step_c(ctx: StepContext, x: int) -> int:
    return x - 3


@durable_execution
def handler(event: Any, context: DurableContext) -> Any:
    x = event["x"]
    return context.step(step_c(context.step(step_b(context.step(step_a(x))))))
