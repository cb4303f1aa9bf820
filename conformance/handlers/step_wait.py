"""Handlers for the conformance suite's `step` (1-x) and `wait` (2-x) requirements, written with
AWS's durable execution SDK as a user would; `conformance/make_template.py` maps them to ids."""

import sys
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution, durable_step
from aws_durable_execution_sdk_python.config import Duration, JitterStrategy, StepConfig, StepSemantics
from aws_durable_execution_sdk_python.retries import (
    RetryDecision,
    RetryPresets,
    RetryStrategyConfig,
    create_retry_strategy,
)

NO_RETRY = StepConfig(retry_strategy=RetryPresets.none())


class TransientError(Exception):
    pass


@durable_step
def greet(step_context: StepContext, name: str) -> str:
    return f"Hello, {name}!"


@durable_execution
def step_basic(event: Any, context: DurableContext) -> str:
    return context.step(greet(event))


@durable_execution
def step_named(event: Any, context: DurableContext) -> str:
    return context.step(lambda _: f"Hello, {event}!", name="custom_step_name")


@durable_execution
def step_sequential(event: Any, context: DurableContext) -> str:
    first = context.step(lambda _: "first")
    return context.step(lambda _: f"{first}_second")


@durable_execution
def step_complex(event: Any, context: DurableContext) -> Any:
    return context.step(
        lambda _: {"user": {"name": event["name"], "tags": event["tags"]}, "count": len(event["tags"])}
    )


@durable_execution
def step_none(event: Any, context: DurableContext) -> None:
    return context.step(lambda _: None)


@durable_step
def greet_logged(step_context: StepContext, name: str) -> str:
    step_context.logger.info(f"Greeting step started for: {name}")
    result = f"Hello, {name}!"
    step_context.logger.info(f"Greeting step completed with: {result}")
    return result


@durable_execution
def step_logger(event: Any, context: DurableContext) -> str:
    return context.step(greet_logged(event))


@durable_execution
def step_then_wait(event: Any, context: DurableContext) -> str:
    result = context.step(lambda _: "computed")
    context.wait(Duration.from_seconds(2))
    return result


@durable_execution
def step_replay_cached(event: Any, context: DurableContext) -> str:
    def run(step_context: StepContext) -> str:
        step_context.logger.info("step executed")
        return "cached_value"

    result = context.step(run)
    context.wait(Duration.from_seconds(1))
    return result


@durable_execution
def step_replay_rethrow(event: Any, context: DurableContext) -> str:
    def run(step_context: StepContext) -> str:
        step_context.logger.info("step executed")
        raise RuntimeError("permanent failure")

    try:
        context.step(run, config=NO_RETRY)
    except Exception:  # noqa: BLE001  (the handler catches what the SDK raises)
        pass
    context.wait(Duration.from_seconds(1))
    return "recovered"


def _fixed(delay: int, attempts: int):
    return create_retry_strategy(
        RetryStrategyConfig(
            max_attempts=attempts,
            initial_delay=Duration.from_seconds(delay),
            backoff_rate=1,
            jitter_strategy=JitterStrategy.NONE,
        )
    )


@durable_execution
def step_retry_then_succeed(event: Any, context: DurableContext) -> str:
    def run(step_context: StepContext) -> str:
        if step_context.attempt < 2:
            raise RuntimeError("transient failure")
        return "Operation succeeded"

    return context.step(run, config=StepConfig(retry_strategy=_fixed(1, 3)))


@durable_execution
def step_retry_exhausted(event: Any, context: DurableContext) -> str:
    def run(step_context: StepContext) -> str:
        raise RuntimeError(f"always fails (attempt {step_context.attempt})")

    return context.step(run, config=StepConfig(retry_strategy=_fixed(1, 4)))


@durable_execution
def step_default_retry(event: Any, context: DurableContext) -> str:
    def run(step_context: StepContext) -> str:
        if step_context.attempt < 3:
            raise RuntimeError("transient failure")
        return "succeeded on third attempt"

    return context.step(run)


@durable_execution
def step_custom_backoff(event: Any, context: DurableContext) -> str:
    strategy = create_retry_strategy(
        RetryStrategyConfig(
            max_attempts=5,
            initial_delay=Duration.from_seconds(2),
            backoff_rate=3,
            jitter_strategy=JitterStrategy.NONE,
        )
    )

    def run(step_context: StepContext) -> str:
        if step_context.attempt < 3:
            raise RuntimeError("transient failure")
        return "succeeded on third attempt"

    return context.step(run, config=StepConfig(retry_strategy=strategy))


def _retry_transient(error: Exception, attempts: int) -> RetryDecision:
    if isinstance(error, TransientError) and attempts < 3:
        return RetryDecision.retry(Duration.from_seconds(1))
    return RetryDecision.no_retry()


def _no_retry_transient(error: Exception, attempts: int) -> RetryDecision:
    if isinstance(error, TransientError):
        return RetryDecision.no_retry()
    return RetryDecision.retry(Duration.from_seconds(1))


@durable_execution
def step_retry_specific(event: Any, context: DurableContext) -> str:
    def run(step_context: StepContext) -> str:
        if step_context.attempt < 2:
            raise TransientError("temporary glitch")
        return "recovered"

    return context.step(run, config=StepConfig(retry_strategy=_retry_transient))


@durable_execution
def step_no_retry_specific(event: Any, context: DurableContext) -> str:
    def run(step_context: StepContext) -> str:
        raise TransientError("not retried")

    return context.step(run, config=StepConfig(retry_strategy=_no_retry_transient))


_CRASHED: set[str] = set()


@durable_execution
def step_at_most_once(event: Any, context: DurableContext) -> str:
    def run(step_context: StepContext) -> str:
        step_context.logger.info(f"at most once step input: {event}")
        sys.exit(1)  # the runtime dies mid-step (Runtime.ExitError)

    return context.step(
        run,
        name="at_most_once_flaky_step",
        config=StepConfig(
            retry_strategy=RetryPresets.none(), step_semantics=StepSemantics.AT_MOST_ONCE_PER_RETRY
        ),
    )


@durable_execution
def step_at_most_once_retry(event: Any, context: DurableContext) -> str:
    def run(step_context: StepContext) -> str:
        step_context.logger.info(f"at most once step input: {event}")
        if step_context.attempt < 2:
            sys.exit(1)
        return "succeeded on second attempt"

    return context.step(
        run,
        config=StepConfig(retry_strategy=_fixed(1, 3), step_semantics=StepSemantics.AT_MOST_ONCE_PER_RETRY),
    )


@durable_execution
def step_fails(event: Any, context: DurableContext) -> str:
    def run(_: StepContext) -> str:
        raise RuntimeError("step failed permanently")

    return context.step(run, config=NO_RETRY)


@durable_execution
def step_caught(event: Any, context: DurableContext) -> str:
    def run(_: StepContext) -> str:
        raise RuntimeError("step failed")

    try:
        value = context.step(run, config=NO_RETRY)
    except Exception:  # noqa: BLE001  (the handler catches what the SDK raises)
        value = "fallback"
    return context.step(lambda _: f"{value}_result")


@durable_execution
def wait_basic(event: Any, context: DurableContext) -> None:
    context.wait(Duration.from_seconds(2))


@durable_execution
def wait_named(event: Any, context: DurableContext) -> None:
    context.wait(Duration.from_seconds(2), name="custom_wait_name")


@durable_execution
def wait_sequential(event: Any, context: DurableContext) -> Any:
    context.wait(Duration.from_seconds(2), name="wait-1")
    context.wait(Duration.from_seconds(2), name="wait-2")
    return {"completedWaits": 2}


@durable_execution
def wait_minutes(event: Any, context: DurableContext) -> None:
    context.wait(Duration.from_minutes(1))


@durable_execution
def wait_hour(event: Any, context: DurableContext) -> None:
    context.wait(Duration.from_hours(1))


REQUIREMENTS = {
    "1-1": "step_basic",
    "1-2": "step_named",
    "1-3": "step_sequential",
    "1-4": "step_complex",
    "1-5": "step_none",
    "1-7": "step_logger",
    "1-8": "step_then_wait",
    "1-9": "step_replay_cached",
    "1-10": "step_replay_rethrow",
    "1-11": "step_retry_then_succeed",
    "1-12": "step_retry_exhausted",
    "1-13": "step_default_retry",
    "1-14": "step_custom_backoff",
    "1-15": "step_retry_specific",
    "1-16": "step_no_retry_specific",
    "1-17": "step_at_most_once",
    "1-18": "step_at_most_once_retry",
    "1-19": "step_fails",
    "1-20": "step_caught",
    "2-1": "wait_basic",
    "2-2": "wait_named",
    "2-3": "wait_sequential",
    "2-4": "wait_minutes",
    "2-5": "wait_hour",
}
NOT_IMPLEMENTED = {}
