"""Handlers for the conformance suite's `wait_for_condition` (6-x) requirements."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, JitterStrategy
from aws_durable_execution_sdk_python.waits import (
    WaitForConditionConfig,
    WaitForConditionDecision,
    WaitStrategyConfig,
    create_wait_strategy,
)


def until(pred: Any, delay: int = 1, attempts: int = 60) -> Any:
    return create_wait_strategy(
        WaitStrategyConfig(
            should_continue_polling=pred,
            max_attempts=attempts,
            initial_delay=Duration.from_seconds(delay),
            backoff_rate=1,
            jitter_strategy=JitterStrategy.NONE,
        )
    )


def _inc(state: int, _: Any) -> int:
    return state + 1


@durable_execution
def poll_counter(event: Any, context: DurableContext) -> Any:
    config = WaitForConditionConfig(wait_strategy=until(lambda s: s < event), initial_state=0)
    return context.wait_for_condition(_inc, config)


@durable_execution
def poll_immediate(event: Any, context: DurableContext) -> Any:
    config = WaitForConditionConfig(wait_strategy=until(lambda s: s < 5), initial_state=event)
    return context.wait_for_condition(lambda s, _: s, config)


@durable_execution
def poll_named(event: Any, context: DurableContext) -> Any:
    config = WaitForConditionConfig(wait_strategy=until(lambda s: s < event), initial_state=0)
    return context.wait_for_condition(_inc, config, name="poll-status")


@durable_execution
def poll_seeded(event: Any, context: DurableContext) -> Any:
    config = WaitForConditionConfig(wait_strategy=until(lambda s: s < event), initial_state=5)
    return context.wait_for_condition(_inc, config)


@durable_execution
def poll_fixed_delay(event: Any, context: DurableContext) -> Any:
    def strategy(state: int, attempts: int) -> WaitForConditionDecision:
        if state >= event:
            return WaitForConditionDecision.stop_polling()
        return WaitForConditionDecision.continue_waiting(Duration.from_seconds(2))

    return context.wait_for_condition(_inc, WaitForConditionConfig(wait_strategy=strategy, initial_state=0))


@durable_execution
def poll_exhausted(event: Any, context: DurableContext) -> Any:
    config = WaitForConditionConfig(wait_strategy=until(lambda s: True, attempts=3), initial_state=0)
    return context.wait_for_condition(_inc, config)


def _raises(state: Any, _: Any) -> Any:
    raise RuntimeError("check failed")


@durable_execution
def poll_check_raises(event: Any, context: DurableContext) -> Any:
    return context.wait_for_condition(
        _raises, WaitForConditionConfig(wait_strategy=until(lambda s: True), initial_state=0)
    )


@durable_execution
def poll_check_raises_caught(event: Any, context: DurableContext) -> Any:
    try:
        return context.wait_for_condition(
            _raises, WaitForConditionConfig(wait_strategy=until(lambda s: True), initial_state=0)
        )
    except Exception:  # noqa: BLE001  (the handler catches what the SDK raises)
        return "recovered"


@durable_execution
def poll_object(event: Any, context: DurableContext) -> Any:
    def check(state: dict, _: Any) -> dict:
        attempts = state["attempts"] + 1
        return {"status": "DONE" if attempts >= 2 else "PENDING", "attempts": attempts}

    config = WaitForConditionConfig(
        wait_strategy=until(lambda s: s["status"] == "PENDING"),
        initial_state={"status": "PENDING", "attempts": 0},
    )
    return context.wait_for_condition(check, config)


@durable_execution
def poll_null(event: Any, context: DurableContext) -> Any:
    config = WaitForConditionConfig(wait_strategy=until(lambda s: False), initial_state=0)
    return context.wait_for_condition(lambda s, _: None, config)


@durable_execution
def poll_then_step(event: Any, context: DurableContext) -> Any:
    config = WaitForConditionConfig(wait_strategy=until(lambda s: s < event), initial_state=0)
    value = context.wait_for_condition(_inc, config)
    return context.step(lambda _: value * 10)


@durable_execution
def poll_twice(event: Any, context: DurableContext) -> Any:
    first = context.wait_for_condition(
        _inc, WaitForConditionConfig(wait_strategy=until(lambda s: s < 2), initial_state=0)
    )
    return context.wait_for_condition(
        _inc, WaitForConditionConfig(wait_strategy=until(lambda s: s < 4), initial_state=first)
    )


REQUIREMENTS = {
    "6-1": "poll_counter",
    "6-2": "poll_immediate",
    "6-3": "poll_named",
    "6-4": "poll_seeded",
    "6-5": "poll_fixed_delay",
    "6-6": "poll_exhausted",
    "6-7": "poll_check_raises",
    "6-8": "poll_check_raises_caught",
    "6-9": "poll_object",
    "6-10": "poll_null",
    "6-12": "poll_then_step",
    "6-13": "poll_twice",
}
NOT_IMPLEMENTED = {}
