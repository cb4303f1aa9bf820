"""Handlers for the conformance suite's `child` (3-x) requirements."""

import logging
import sys
import time
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, StepConfig
from aws_durable_execution_sdk_python.retries import (
    JitterStrategy,
    RetryPresets,
    RetryStrategyConfig,
    create_retry_strategy,
)

NO_RETRY = StepConfig(retry_strategy=RetryPresets.none())
RETRY_1S = create_retry_strategy(
    RetryStrategyConfig(
        max_attempts=3,
        initial_delay=Duration.from_seconds(1),
        backoff_rate=1,
        jitter_strategy=JitterStrategy.NONE,
    )
)
TWO_ATTEMPTS = create_retry_strategy(
    RetryStrategyConfig(
        max_attempts=2,
        initial_delay=Duration.from_seconds(1),
        backoff_rate=1,
        jitter_strategy=JitterStrategy.NONE,
    )
)
replay_log = logging.getLogger("conformance.replay")


def _log_always(context: DurableContext, message: str) -> None:
    """A log line even while replaying (the SDK's logger is quiet then): shows re-execution."""
    replay_log.info(message, extra={"executionArn": context.state.durable_execution_arn})


@durable_execution
def child_basic(event: Any, context: DurableContext) -> Any:
    return context.run_in_child_context(lambda c: c.step(lambda _: event))


@durable_execution
def child_named(event: Any, context: DurableContext) -> Any:
    return context.run_in_child_context(lambda c: c.step(lambda _: event["value"]), name=event["name"])


@durable_execution
def child_sequential(event: Any, context: DurableContext) -> Any:
    def body(c: DurableContext) -> Any:
        first = c.step(lambda _: event, name="first")
        return c.step(lambda _: first, name="second")

    return context.run_in_child_context(body, name="sequential")


def _fail(_: StepContext) -> Any:
    raise RuntimeError("child step failed")


@durable_execution
def child_error(event: Any, context: DurableContext) -> Any:
    return context.run_in_child_context(lambda c: c.step(_fail, config=NO_RETRY), name="failing_child")


@durable_execution
def child_error_caught(event: Any, context: DurableContext) -> Any:
    try:
        context.run_in_child_context(lambda c: c.step(_fail, config=NO_RETRY))
    except Exception:  # noqa: BLE001  (the handler catches what the SDK raises)
        pass
    return context.step(lambda _: event, name="recovery")


@durable_execution
def child_nested(event: Any, context: DurableContext) -> Any:
    def inner(c: DurableContext) -> Any:
        return c.step(lambda _: event, name="inner_step")

    def outer(c: DurableContext) -> Any:
        c.step(lambda _: event, name="outer_step")
        return c.run_in_child_context(inner, name="inner")

    return context.run_in_child_context(outer, name="outer")


@durable_execution
def child_retry(event: Any, context: DurableContext) -> Any:
    def run(step_context: StepContext) -> Any:
        if step_context.attempt < 2:
            raise RuntimeError("first attempt fails")
        return event

    return context.run_in_child_context(
        lambda c: c.step(run, config=StepConfig(retry_strategy=RETRY_1S)), name="retrying_child"
    )


@durable_execution
def child_retry_exhausted(event: Any, context: DurableContext) -> Any:
    return context.run_in_child_context(
        lambda c: c.step(_fail, config=StepConfig(retry_strategy=TWO_ATTEMPTS)), name="exhausted_child"
    )


@durable_execution
def child_replay_cached(event: Any, context: DurableContext) -> Any:
    result = context.run_in_child_context(lambda c: c.step(lambda _: event))
    context.wait(Duration.from_seconds(1))
    return result


@durable_execution
def child_step_wait(event: Any, context: DurableContext) -> Any:
    def body(c: DurableContext) -> Any:
        value = c.step(lambda _: event)
        c.wait(Duration.from_seconds(1))
        return value

    return context.run_in_child_context(body, name="step_and_wait")


@durable_execution
def child_large(event: Any, context: DurableContext) -> Any:
    def body(c: DurableContext) -> Any:
        _log_always(c, f"large child for {event}")
        small = c.step(lambda _: event, name="small")
        return {"data": small * (300 * 1024 // max(1, len(small)) + 1)}

    result = context.run_in_child_context(body, name="large_child")
    context.wait(Duration.from_seconds(1))
    return {"size": len(result["data"])}


_INTERRUPTED: set[str] = set()


@durable_execution
def child_interrupted(event: Any, context: DurableContext) -> Any:
    arn = context.state.durable_execution_arn

    def run(_: StepContext) -> Any:
        if arn not in _INTERRUPTED:
            _INTERRUPTED.add(arn)
            time.sleep(0.5)  # StepStarted is checkpointed in the background: let it land first
            sys.exit(1)  # then the runtime dies
        return event

    return context.run_in_child_context(lambda c: c.step(run))


@durable_execution
def child_wait_only(event: Any, context: DurableContext) -> Any:
    def body(c: DurableContext) -> Any:
        c.wait(Duration.from_seconds(1))
        return event

    value = context.run_in_child_context(body, name="waiting_child")
    return context.step(lambda _: value, name="after")


@durable_execution
def child_error_direct(event: Any, context: DurableContext) -> Any:
    def body(_: DurableContext) -> Any:
        raise RuntimeError("thrown in the child body")

    return context.run_in_child_context(body, name="throwing_child")


@durable_execution
def child_null(event: Any, context: DurableContext) -> Any:
    return context.run_in_child_context(lambda _: None, name="null_child")


@durable_execution
def child_logger_only(event: Any, context: DurableContext) -> Any:
    def body(c: DurableContext) -> Any:
        _log_always(c, f"child logged {event}")
        return event

    result = context.run_in_child_context(body, name="logging_child")
    context.wait(Duration.from_seconds(1))
    return result


@durable_execution
def child_then_outer(event: Any, context: DurableContext) -> Any:
    def body(c: DurableContext) -> Any:
        value = c.step(lambda _: event, name="inner_step")
        c.wait(Duration.from_seconds(1), name="inner_wait")
        return value

    value = context.run_in_child_context(body, name="mixed_child")
    outer = context.step(lambda _: value, name="outer_step")
    context.wait(Duration.from_seconds(1), name="outer_wait")
    return outer


REQUIREMENTS = {
    "3-1": "child_basic",
    "3-2": "child_named",
    "3-3": "child_sequential",
    "3-4": "child_error",
    "3-5": "child_error_caught",
    "3-6": "child_nested",
    "3-7": "child_retry",
    "3-8": "child_retry_exhausted",
    "3-9": "child_replay_cached",
    "3-10": "child_step_wait",
    "3-11": "child_large",
    "3-12": "child_interrupted",
    "3-13": "child_wait_only",
    "3-15": "child_error_direct",
    "3-16": "child_null",
    "3-17": "child_logger_only",
    "3-18": "child_then_outer",
}
NOT_IMPLEMENTED = {}
