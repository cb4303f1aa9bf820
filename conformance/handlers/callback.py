"""Handlers for the conformance suite's `callback` (4-x) requirements."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration


@durable_execution
def callback_basic(event: Any, context: DurableContext) -> Any:
    return context.create_callback(name=event).result()


@durable_execution
def callback_named(event: Any, context: DurableContext) -> Any:
    return context.create_callback(name="approval").result()


@durable_execution
def callback_timeout(event: Any, context: DurableContext) -> Any:
    return context.create_callback(
        name=event, config=CallbackConfig(timeout=Duration.from_seconds(5))
    ).result()


@durable_execution
def callback_heartbeat_timeout(event: Any, context: DurableContext) -> Any:
    config = CallbackConfig(heartbeat_timeout=Duration.from_seconds(5))
    return context.create_callback(name=event, config=config).result()


@durable_execution
def callback_heartbeat_then_success(event: Any, context: DurableContext) -> Any:
    config = CallbackConfig(heartbeat_timeout=Duration.from_seconds(10))
    return context.create_callback(name=event, config=config).result()


@durable_execution
def callback_failure(event: Any, context: DurableContext) -> Any:
    return context.create_callback(name=event).result()


@durable_execution
def callback_step_failure(event: Any, context: DurableContext) -> Any:
    callback = context.create_callback(name=event)
    context.step(lambda _: "notified")
    return callback.result()


@durable_execution
def callback_step_timeout(event: Any, context: DurableContext) -> Any:
    callback = context.create_callback(name=event, config=CallbackConfig(timeout=Duration.from_seconds(5)))
    context.step(lambda _: "notified")
    return callback.result()


@durable_execution
def callback_wait(event: Any, context: DurableContext) -> Any:
    callback = context.create_callback(name=event)
    context.wait(Duration.from_seconds(5))
    return callback.result()


@durable_execution
def callback_timeout_during_wait(event: Any, context: DurableContext) -> Any:
    callback = context.create_callback(name=event, config=CallbackConfig(timeout=Duration.from_seconds(3)))
    context.wait(Duration.from_seconds(6))
    return callback.result()


@durable_execution
def callback_then_wait(event: Any, context: DurableContext) -> Any:
    result = context.create_callback(name=event).result()
    context.wait(Duration.from_seconds(2))
    return result


@durable_execution
def callback_failure_caught(event: Any, context: DurableContext) -> Any:
    try:
        result = context.create_callback(name=event).result()
    except Exception as e:  # noqa: BLE001  (the handler catches what the SDK raises)
        result = str(e)
    context.wait(Duration.from_seconds(2))
    return result


@durable_execution
def callback_timeout_caught(event: Any, context: DurableContext) -> Any:
    try:
        context.create_callback(name=event, config=CallbackConfig(timeout=Duration.from_seconds(3))).result()
        outcome = "completed"
    except Exception:  # noqa: BLE001  (the handler catches what the SDK raises)
        outcome = "timed out"
    context.wait(Duration.from_seconds(2))
    return outcome


@durable_execution
def callback_a_then_b(event: Any, context: DurableContext) -> Any:
    a = context.create_callback(name=event[0]).result()
    b = context.create_callback(name=event[1]).result()
    return [a, b]


@durable_execution
def callback_both_a_first(event: Any, context: DurableContext) -> Any:
    a = context.create_callback(name=event[0])
    b = context.create_callback(name=event[1])
    return [a.result(), b.result()]


@durable_execution
def callback_both_b_first(event: Any, context: DurableContext) -> Any:
    a = context.create_callback(name=event[0])
    b = context.create_callback(name=event[1])
    rb = b.result()
    return [a.result(), rb]


REQUIREMENTS = {
    "4-1": "callback_basic",
    "4-2": "callback_named",
    "4-3": "callback_timeout",
    "4-4": "callback_heartbeat_timeout",
    "4-5": "callback_heartbeat_then_success",
    "4-6": "callback_failure",
    "4-7": "callback_step_failure",
    "4-8": "callback_step_timeout",
    "4-9": "callback_wait",
    "4-10": "callback_wait",
    "4-11": "callback_timeout_during_wait",
    "4-12": "callback_then_wait",
    "4-13": "callback_failure_caught",
    "4-14": "callback_timeout_caught",
    "4-17": "callback_a_then_b",
    "4-18": "callback_both_a_first",
    "4-19": "callback_both_b_first",
}
NOT_IMPLEMENTED = {}
