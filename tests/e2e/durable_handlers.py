"""Durable functions written with AWS's durable execution SDK, for tests/e2e/test_durable_sdk.py."""

import threading
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, StepConfig
from aws_durable_execution_sdk_python.retries import (
    JitterStrategy,
    RetryStrategyConfig,
    create_retry_strategy,
)

RUNS: dict[str, int] = {}  # step body -> how many times it ran (in this process)


@durable_execution
def step_wait_step(event: Any, context: DurableContext) -> Any:
    def first(_: StepContext) -> str:
        RUNS["first"] = RUNS.get("first", 0) + 1
        return f"hello {event['name']}"

    greeting = context.step(first, name="first")
    context.wait(Duration.from_seconds(1), name="pause")
    return context.step(lambda _: f"{greeting}!", name="second")


@durable_execution
def approval(event: Any, context: DurableContext) -> Any:
    callback = context.create_callback(name="approval")
    context.step(lambda _: callback.callback_id, name="notify")
    return {"decision": callback.result()}


@durable_execution
def flaky(event: Any, context: DurableContext) -> Any:
    def run(step_context: StepContext) -> str:
        if step_context.attempt < 2:
            raise RuntimeError("first attempt fails")
        return f"attempt {step_context.attempt}"

    retry = create_retry_strategy(
        RetryStrategyConfig(
            max_attempts=3,
            initial_delay=Duration.from_seconds(1),
            backoff_rate=1,
            jitter_strategy=JitterStrategy.NONE,
        )
    )
    return context.step(run, config=StepConfig(retry_strategy=retry))


@durable_execution
def three_steps(event: Any, context: DurableContext) -> Any:
    a = context.step(lambda _: 1, name="a")
    b = context.step(lambda _: a + 1, name="b")
    return context.step(lambda _: b + 1, name="c")


HELD = threading.Event()  # `held` runs until a test sets it


@durable_execution
def held(event: Any, context: DurableContext) -> Any:
    """A step that runs until released: longer than the decider would wait."""

    def run(_: StepContext) -> str:
        RUNS["held"] = RUNS.get("held", 0) + 1
        if not HELD.wait(60):
            raise RuntimeError("never released")
        return "released"

    return context.step(run, name="held")


@durable_execution
def big_steps(event: Any, context: DurableContext) -> Any:
    """Five 40 KB step results, then a wait: the next invocation's operations exceed the 128 KB the
    asynchronous event carries, so the SDK reads the rest of them with GetDurableExecutionState."""

    def big(i: int) -> Any:
        def run(_: StepContext) -> str:
            RUNS[f"big{i}"] = RUNS.get(f"big{i}", 0) + 1
            return str(i) * 40_000

        return run

    parts = [context.step(big(i), name=f"big{i}") for i in range(5)]
    context.wait(Duration.from_seconds(1), name="pause")
    return sum(len(p) for p in parts)
