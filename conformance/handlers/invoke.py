"""Handlers for the conformance suite's `invoke` (5-x) requirements, and the durable functions
they invoke (TARGETS: in the same stack, named `<stack>-<LogicalId>` by the deploy)."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration


def target(context: DurableContext, logical_id: str) -> str:
    """The physical name of a function of this stack: this function's name with its logical id swapped."""
    own = context.lambda_context.function_name
    return f"{own.rsplit('-', 1)[0]}-{logical_id}"


@durable_execution
def echo(event: Any, context: DurableContext) -> Any:
    return event


@durable_execution
def fails(event: Any, context: DurableContext) -> Any:
    raise RuntimeError("target function failed")


@durable_execution
def measure(event: Any, context: DurableContext) -> Any:
    return {"length": len(event["data"])}


@durable_execution
def invoke_basic(event: Any, context: DurableContext) -> Any:
    return context.invoke(target(context, "InvokeEcho"), event)


@durable_execution
def invoke_named(event: Any, context: DurableContext) -> Any:
    return context.invoke(target(context, "InvokeEcho"), event["payload"], name=event["name"])


@durable_execution
def invoke_fails(event: Any, context: DurableContext) -> Any:
    return context.invoke(target(context, "InvokeFails"), event)


@durable_execution
def invoke_fails_caught(event: Any, context: DurableContext) -> Any:
    try:
        return context.invoke(target(context, "InvokeFails"), event)
    except Exception:  # noqa: BLE001  (the handler catches what the SDK raises)
        return "fallback"


@durable_execution
def invoke_large(event: Any, context: DurableContext) -> Any:
    return context.invoke(target(context, "InvokeMeasure"), {"data": "x" * 200_000})


@durable_execution
def invoke_then_wait(event: Any, context: DurableContext) -> Any:
    result = context.invoke(target(context, "InvokeEcho"), "cached")
    context.wait(Duration.from_seconds(1))
    return result


@durable_execution
def invoke_fails_then_wait(event: Any, context: DurableContext) -> Any:
    try:
        result = context.invoke(target(context, "InvokeFails"), None)
    except Exception:  # noqa: BLE001  (the handler catches what the SDK raises)
        result = "caught"
    context.wait(Duration.from_seconds(1))
    return result


@durable_execution
def step_then_invoke(event: Any, context: DurableContext) -> Any:
    value = context.step(lambda _: "from step")
    return context.invoke(target(context, "InvokeEcho"), value)


@durable_execution
def invoke_then_step(event: Any, context: DurableContext) -> Any:
    value = context.invoke(target(context, "InvokeEcho"), "from invoke")
    return context.step(lambda _: f"processed {value}")


@durable_execution
def invoke_in_child(event: Any, context: DurableContext) -> Any:
    return context.run_in_child_context(lambda c: c.invoke(target(context, "InvokeEcho"), "in child"))


@durable_execution
def invoke_twice(event: Any, context: DurableContext) -> Any:
    first = context.invoke(target(context, "InvokeEcho"), "first")
    second = context.invoke(target(context, "InvokeEcho"), "second")
    return [first, second]


REQUIREMENTS = {
    "5-1": "invoke_basic",
    "5-2": "invoke_named",
    "5-3": "invoke_basic",
    "5-4": "invoke_basic",
    "5-5": "invoke_fails",
    "5-6": "invoke_fails_caught",
    "5-7": "invoke_large",
    "5-9": "invoke_then_wait",
    "5-10": "invoke_fails_then_wait",
    "5-11": "step_then_invoke",
    "5-12": "invoke_then_step",
    "5-13": "invoke_in_child",
    "5-14": "invoke_twice",
}
TARGETS = {"InvokeEcho": "echo", "InvokeFails": "fails", "InvokeMeasure": "measure"}
NOT_IMPLEMENTED = {
    "5-8": "tenant ids are not applicable to Orbit's durable-function profile (issue 32)",
}
