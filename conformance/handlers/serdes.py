"""Handlers for the conformance requirements about custom serdes classes (1-6, 3-14, 4-15, 4-16,
5-15, 5-16, 6-11, 8-15, 9-14, 9-19, 9-20). Serdes run inside the SDK: the backend only stores the
text they produce, so these pass on Orbit as written for Lambda."""

import json
from datetime import datetime
from typing import Any

from aws_durable_execution_sdk_python import BatchResult, DurableContext, durable_execution
from aws_durable_execution_sdk_python.concurrency.models import BatchItem, CompletionReason
from aws_durable_execution_sdk_python.config import (
    BatchItemStatus,
    ChildConfig,
    Duration,
    InvokeConfig,
    JitterStrategy,
    MapConfig,
    ParallelConfig,
    StepConfig,
)
from aws_durable_execution_sdk_python.serdes import SerDes, SerDesContext
from aws_durable_execution_sdk_python.waits import (
    WaitForConditionConfig,
    WaitStrategyConfig,
    create_wait_strategy,
)
from invoke import target


class Upper(SerDes[Any]):
    """JSON, with every string upper-cased on the way out."""

    def serialize(self, value: Any, serdes_context: SerDesContext) -> str:
        return json.dumps(value.upper() if isinstance(value, str) else value)

    def deserialize(self, data: str, serdes_context: SerDesContext) -> Any:
        return json.loads(data)


class RawUpper(SerDes[str]):
    """The text itself, upper-cased (not JSON)."""

    def serialize(self, value: str, serdes_context: SerDesContext) -> str:
        return value.upper()

    def deserialize(self, data: str, serdes_context: SerDesContext) -> str:
        return data


class Stamped(SerDes[Any]):
    """A JSON object whose ISO `timestamp` becomes epoch seconds."""

    def serialize(self, value: Any, serdes_context: SerDesContext) -> str:
        return json.dumps(value)

    def deserialize(self, data: str, serdes_context: SerDesContext) -> Any:
        obj = json.loads(data)
        obj["timestamp"] = int(datetime.fromisoformat(obj["timestamp"].replace("Z", "+00:00")).timestamp())
        return obj


class Number(SerDes[int]):
    def serialize(self, value: int, serdes_context: SerDesContext) -> str:
        return str(value)

    def deserialize(self, data: str, serdes_context: SerDesContext) -> int:
        return int(json.loads(data))


class UpperResult(SerDes[str]):
    """Reads a result as its text upper-cased."""

    def serialize(self, value: str, serdes_context: SerDesContext) -> str:
        return json.dumps(value)

    def deserialize(self, data: str, serdes_context: SerDesContext) -> str:
        return data.upper()


class Encoded(SerDes[str]):
    """A string state as `enc:<text>`."""

    def serialize(self, value: str, serdes_context: SerDesContext) -> str:
        return "enc:" + value

    def deserialize(self, data: str, serdes_context: SerDesContext) -> str:
        assert data.startswith("enc:"), data
        return data[4:]


class Wrapped(SerDes[Any]):
    def serialize(self, value: Any, serdes_context: SerDesContext) -> str:
        return json.dumps({"wrapped": value})

    def deserialize(self, data: str, serdes_context: SerDesContext) -> Any:
        return json.loads(data)["wrapped"]


class WrappedText(SerDes[str]):
    def serialize(self, value: str, serdes_context: SerDesContext) -> str:
        return "wrapped:" + value

    def deserialize(self, data: str, serdes_context: SerDesContext) -> str:
        return data[len("wrapped:") :]


class OpSerde(SerDes[Any]):
    """A whole map result as `OPSERDE:<results joined by commas>`."""

    def serialize(self, value: Any, serdes_context: SerDesContext) -> str:
        if isinstance(value, BatchResult):  # the SDK also hands the items to an operation-level serdes
            return "OPSERDE:" + ",".join(value.get_results())
        return json.dumps(value)

    def deserialize(self, data: str, serdes_context: SerDesContext) -> Any:
        if not data.startswith("OPSERDE:"):
            return json.loads(data)
        values = data[len("OPSERDE:") :].split(",")
        items = [BatchItem(i, BatchItemStatus.SUCCEEDED, v) for i, v in enumerate(values)]
        return BatchResult(items, CompletionReason.ALL_COMPLETED)


@durable_execution
def step_serdes(event: Any, context: DurableContext) -> Any:
    return context.step(lambda _: event, config=StepConfig(serdes=Upper()))


@durable_execution
def child_serdes(event: Any, context: DurableContext) -> Any:
    return context.run_in_child_context(
        lambda c: c.step(lambda _: event), name="upper_child", config=ChildConfig(serdes=RawUpper())
    )


@durable_execution
def callback_stamped(event: Any, context: DurableContext) -> Any:
    from aws_durable_execution_sdk_python.config import CallbackConfig

    return {"received": context.create_callback(name=event, config=CallbackConfig(serdes=Stamped())).result()}


@durable_execution
def callback_number(event: Any, context: DurableContext) -> Any:
    from aws_durable_execution_sdk_python.config import CallbackConfig

    count = context.create_callback(name=event, config=CallbackConfig(serdes=Number())).result()
    return {"count": count, "doubled": count * 2}


@durable_execution
def invoke_payload_serdes(event: Any, context: DurableContext) -> Any:
    return context.invoke(target(context, "InvokeEcho"), event, config=InvokeConfig(serdes_payload=Upper()))


@durable_execution
def invoke_result_serdes(event: Any, context: DurableContext) -> Any:
    return context.invoke(
        target(context, "InvokeEcho"), event, config=InvokeConfig(serdes_result=UpperResult())
    )


@durable_execution
def poll_serdes(event: Any, context: DurableContext) -> Any:
    strategy = create_wait_strategy(
        WaitStrategyConfig(
            should_continue_polling=lambda s: len(s) < 2,
            initial_delay=Duration.from_seconds(1),
            backoff_rate=1,
            jitter_strategy=JitterStrategy.NONE,
        )
    )
    config = WaitForConditionConfig(wait_strategy=strategy, initial_state="", serdes=Encoded())
    return context.wait_for_condition(lambda s, _: s + "x", config)


@durable_execution
def parallel_item_serdes(event: Any, context: DurableContext) -> Any:
    config = ParallelConfig(max_concurrency=1, item_serdes=Wrapped())
    return context.parallel([lambda c: "x", lambda c: "y"], name="serde", config=config).get_results()


@durable_execution
def map_item_serdes(event: Any, context: DurableContext) -> Any:
    config = MapConfig(max_concurrency=1, item_serdes=WrappedText())
    return context.map(
        ["x", "y"], lambda c, item, i, items: item.upper(), name="items", config=config
    ).get_results()


@durable_execution
def map_op_serdes(event: Any, context: DurableContext) -> Any:
    config = MapConfig(max_concurrency=1, serdes=OpSerde())
    return context.map(
        ["x", "y"], lambda c, item, i, items: item.upper(), name="op", config=config
    ).get_results()


@durable_execution
def map_op_serdes_wait(event: Any, context: DurableContext) -> Any:
    config = MapConfig(max_concurrency=1, serdes=OpSerde())
    r = context.map(["x", "y"], lambda c, item, i, items: item.upper(), name="op", config=config)
    context.wait(Duration.from_seconds(1))
    return r.get_results()


REQUIREMENTS = {
    "1-6": "step_serdes",
    "3-14": "child_serdes",
    "4-15": "callback_stamped",
    "4-16": "callback_number",
    "5-15": "invoke_payload_serdes",
    "5-16": "invoke_result_serdes",
    "6-11": "poll_serdes",
    "8-15": "parallel_item_serdes",
    "9-14": "map_item_serdes",
    "9-19": "map_op_serdes",
    "9-20": "map_op_serdes_wait",
}
