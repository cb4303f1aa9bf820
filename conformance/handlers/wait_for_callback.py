"""Handlers for the conformance suite's `wait_for_callback` (7-x) requirements."""

import json
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, WaitForCallbackConfig
from aws_durable_execution_sdk_python.retries import (
    JitterStrategy,
    RetryStrategyConfig,
    create_retry_strategy,
)

SUBMITTED: dict[str, str] = {}  # callback id -> the execution it belongs to (what an external system keeps)


def submit(callback_id: str, ctx: Any) -> None:
    SUBMITTED[callback_id] = "submitted"


@durable_execution
def wfc_basic(event: Any, context: DurableContext) -> Any:
    return context.wait_for_callback(submit, name=event)


@durable_execution
def wfc_named(event: Any, context: DurableContext) -> Any:
    return context.wait_for_callback(submit, name="approval")


@durable_execution
def wfc_unnamed(event: Any, context: DurableContext) -> Any:
    return context.wait_for_callback(submit)


@durable_execution
def wfc_failure(event: Any, context: DurableContext) -> Any:
    return context.wait_for_callback(submit, name=event)


@durable_execution
def wfc_timeout(event: Any, context: DurableContext) -> Any:
    return context.wait_for_callback(
        submit, name=event, config=WaitForCallbackConfig(timeout=Duration.from_seconds(3))
    )


@durable_execution
def wfc_failure_caught(event: Any, context: DurableContext) -> Any:
    try:
        return context.wait_for_callback(submit, name=event)
    except Exception:  # noqa: BLE001  (the handler catches what the SDK raises)
        return "recovered"


@durable_execution
def wfc_submitter_fails(event: Any, context: DurableContext) -> Any:
    def failing(callback_id: str, ctx: Any) -> None:
        raise RuntimeError("submitter failed")

    retry = create_retry_strategy(
        RetryStrategyConfig(
            max_attempts=2,
            initial_delay=Duration.from_seconds(1),
            backoff_rate=1,
            jitter_strategy=JitterStrategy.NONE,
        )
    )
    return context.wait_for_callback(failing, name=event, config=WaitForCallbackConfig(retry_strategy=retry))


@durable_execution
def wfc_in_child(event: Any, context: DurableContext) -> Any:
    return context.run_in_child_context(lambda c: c.wait_for_callback(submit, name=event), name="wrapper")


@durable_execution
def wfc_twice(event: Any, context: DurableContext) -> Any:
    context.wait_for_callback(submit, name="first")
    return context.wait_for_callback(submit, name="second")


@durable_execution
def wfc_after_wait_and_step(event: Any, context: DurableContext) -> Any:
    context.wait(Duration.from_seconds(1))
    context.step(lambda _: "prepared")
    return context.wait_for_callback(submit, name=event)


@durable_execution
def wfc_json(event: Any, context: DurableContext) -> Any:
    result = context.wait_for_callback(submit, name=event)
    return (json.loads(result) if isinstance(result, str) else result)["status"]


@durable_execution
def wfc_heartbeat_timeout(event: Any, context: DurableContext) -> Any:
    return context.wait_for_callback(
        submit, name=event, config=WaitForCallbackConfig(heartbeat_timeout=Duration.from_seconds(5))
    )


@durable_execution
def wfc_heartbeat_then_success(event: Any, context: DurableContext) -> Any:
    return context.wait_for_callback(
        submit, name=event, config=WaitForCallbackConfig(heartbeat_timeout=Duration.from_seconds(10))
    )


@durable_execution
def wfc_timeout_caught(event: Any, context: DurableContext) -> Any:
    try:
        return context.wait_for_callback(
            submit, name=event, config=WaitForCallbackConfig(timeout=Duration.from_seconds(3))
        )
    except Exception:  # noqa: BLE001  (the handler catches what the SDK raises)
        return "timed-out-handled"


REQUIREMENTS = {
    "7-1": "wfc_basic",
    "7-2": "wfc_named",
    "7-3": "wfc_unnamed",
    "7-4": "wfc_failure",
    "7-5": "wfc_timeout",
    "7-6": "wfc_failure_caught",
    "7-7": "wfc_submitter_fails",
    "7-8": "wfc_in_child",
    "7-9": "wfc_twice",
    "7-10": "wfc_after_wait_and_step",
    "7-11": "wfc_json",
    "7-12": "wfc_heartbeat_timeout",
    "7-13": "wfc_heartbeat_then_success",
    "7-14": "wfc_timeout_caught",
    "7-15": "wfc_basic",
}
