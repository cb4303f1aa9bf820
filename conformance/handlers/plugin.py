"""Handlers for the conformance suite's `plugin` (10-x) requirements: instrumentation plugins
registered through the SDK's plugin API, logging JSON lines to stdout that name their execution
(Lambda sends stdout to the function's log group; the endpoint keeps such lines the same way)."""

import json
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, StepConfig
from aws_durable_execution_sdk_python.plugin import DurableInstrumentationPlugin, OperationType
from aws_durable_execution_sdk_python.retries import (
    JitterStrategy,
    RetryPresets,
    RetryStrategyConfig,
    create_retry_strategy,
)


class Logging(DurableInstrumentationPlugin):
    def __init__(self, name: str, hooks: frozenset[str], faulty: bool = False) -> None:
        self.name, self.hooks, self.faulty, self.arn = name, hooks, faulty, None

    def log(self, hook: str, **fields: Any) -> None:
        if hook in self.hooks:
            print(json.dumps({"plugin": self.name, "hook": hook, **fields, "durableExecutionArn": self.arn}))
        if self.faulty:
            raise RuntimeError(f"{self.name} fails in {hook}")

    def on_invocation_start(self, info: Any) -> None:
        self.arn = info.execution_arn
        self.log("invocation-start", first=info.is_first_invocation)

    def on_invocation_end(self, info: Any) -> None:
        self.log("invocation-end", status=info.status.value)

    def on_operation_start(self, info: Any) -> None:
        if info.operation_type is OperationType.STEP:
            self.log("operation-start", op=info.operation_id)

    def on_operation_end(self, info: Any) -> None:
        if info.operation_type is OperationType.STEP:
            self.log("operation-end", op=info.operation_id, status=info.status.value)

    def on_user_function_start(self, info: Any) -> None:
        if info.operation_type is OperationType.STEP:
            self.log("attempt-start", n=info.attempt, op=info.operation_id)

    def on_user_function_end(self, info: Any) -> None:
        if info.operation_type is OperationType.STEP:
            self.log("attempt-end", n=info.attempt, outcome=info.outcome.value, op=info.operation_id)


INVOCATION = frozenset({"invocation-start", "invocation-end"})
OPERATION = frozenset({"operation-start", "operation-end"})
ATTEMPT = frozenset({"attempt-start", "attempt-end"})


class Factory:
    def __init__(self, name: str, hooks: frozenset[str], faulty: bool = False) -> None:
        self.name, self.hooks, self.faulty = name, hooks, faulty

    def create_plugin(self, info: Any) -> DurableInstrumentationPlugin:
        return Logging(self.name, self.hooks, self.faulty)


def greet_step(context: DurableContext, event: Any) -> str:
    def run(step_context: StepContext) -> str:
        step_context.logger.info(f"Greeting step running for: {event}")
        return f"Hello, {event}!"

    return context.step(run, name="greet")


@durable_execution(plugins=[Factory("CONFPLUGIN", INVOCATION)])
def plugin_invocation(event: Any, context: DurableContext) -> Any:
    return greet_step(context, event)


@durable_execution(plugins=[Factory("CONFPLUGIN", OPERATION)])
def plugin_operation(event: Any, context: DurableContext) -> Any:
    return greet_step(context, event)


RETRY = create_retry_strategy(
    RetryStrategyConfig(
        max_attempts=3,
        initial_delay=Duration.from_seconds(1),
        backoff_rate=1,
        jitter_strategy=JitterStrategy.NONE,
    )
)


@durable_execution(plugins=[Factory("CONFPLUGIN", ATTEMPT)])
def plugin_attempts(event: Any, context: DurableContext) -> Any:
    def run(step_context: StepContext) -> str:
        if step_context.attempt < 2:
            raise RuntimeError("first attempt fails")
        return "Operation succeeded"

    return context.step(run, config=StepConfig(retry_strategy=RETRY))


@durable_execution(plugins=[Factory("CONFPLUGIN-FAULTY", INVOCATION | OPERATION | ATTEMPT, faulty=True)])
def plugin_faulty(event: Any, context: DurableContext) -> Any:
    return greet_step(context, event)


@durable_execution(plugins=[Factory("CONFPLUGIN-A", INVOCATION), Factory("CONFPLUGIN-B", INVOCATION)])
def plugin_two(event: Any, context: DurableContext) -> Any:
    return greet_step(context, event)


@durable_execution(plugins=[Factory("CONFPLUGIN", INVOCATION)])
def plugin_replay(event: Any, context: DurableContext) -> Any:
    context.wait(Duration.from_seconds(2))
    return "waited"


@durable_execution(plugins=[Factory("CONFPLUGIN", INVOCATION)])
def plugin_failed(event: Any, context: DurableContext) -> Any:
    def run(_: StepContext) -> str:
        raise RuntimeError("always fails")

    return context.step(run, config=StepConfig(retry_strategy=RetryPresets.none()))


REQUIREMENTS = {
    "10-1": "plugin_invocation",
    "10-2": "plugin_operation",
    "10-3": "plugin_attempts",
    "10-4": "plugin_faulty",
    "10-5": "plugin_two",
    "10-6": "plugin_replay",
    "10-7": "plugin_failed",
}
