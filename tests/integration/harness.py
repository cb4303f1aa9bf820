"""Drive the real Lambda handlers on moto the way the SQS event source mapping does.

`Cloud.pump(queue)` receives up to 10 messages, hands them to the queue's
handler as a real SQS event, deletes the ones the handler did not report in
`batchItemFailures`, and (like an expired visibility timeout) makes the failed
ones visible again at once, so redrive after maxReceiveCount happens on moto's
own counters.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from aws_resources import Stack

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
_loaded: dict[str, Any] = {}


def load_app(function: str) -> Any:
    """Import functions/<function>/app.py as its own module (every handler file is called app.py)."""
    if function not in _loaded:
        path = ROOT / "functions" / function / "app.py"
        spec = importlib.util.spec_from_file_location(f"orbit_fn_{function}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        _loaded[function] = module
    return _loaded[function]


class LambdaContext:
    def __init__(self, name: str, timeout_s: int = 30) -> None:
        self.function_name = name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
        self.memory_limit_in_mb = 512
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/orbit/test/{name}"
        self.log_stream_name = "2026/01/01/[$LATEST]test"
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def load_event(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return event


def sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """What Lambda hands an SQS-triggered function (message attributes included: the trace header)."""
    from orbit.local.pump import to_record

    return {"Records": [to_record(m, queue_arn) for m in messages]}


HANDLERS = {"DecisionQueue": "decider", "DefaultTaskQueue": "example_worker", "HttpTaskQueue": "http_task",
            "TriggerQueue": "triggers"}


class Cloud:
    def __init__(self, stack: Stack, sqs: Any) -> None:
        self.stack = stack
        self.sqs = sqs
        self.invocations: dict[str, int] = {}

    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        self.invocations[function] = self.invocations.get(function, 0) + 1
        return load_app(function).handler(event, LambdaContext(function))

    def pump(self, queue: str, max_messages: int = 10) -> int:
        """One event source mapping poll of `queue`: returns how many messages were handed over."""
        url = self.stack.queues[queue]
        got = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=max_messages,
                                       AttributeNames=["All"],
                                       MessageAttributeNames=["All"]).get("Messages", [])
        if not got:
            return 0
        try:
            response = self.invoke(HANDLERS[queue], sqs_event(got, self.stack.arns[queue]))
        except BaseException:
            # The invocation died: every message comes back when its visibility expires (now).
            for m in got:
                self.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"],
                                                   VisibilityTimeout=0)
            raise
        failed = {f["itemIdentifier"] for f in (response or {}).get("batchItemFailures", [])}
        for m in got:
            if m["MessageId"] in failed:
                self.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"],
                                                   VisibilityTimeout=0)
            else:
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        return len(got)

    def run_until_idle(self, max_rounds: int = 200) -> int:
        total = 0
        for _ in range(max_rounds):
            n = sum(self.pump(q) for q in HANDLERS)
            total += n
            if n == 0:
                return total
        raise AssertionError(f"queues still busy after {max_rounds} rounds")

    def api(self, method: str, path: str, body: Any = None,
            query: dict[str, str] | None = None) -> tuple[int, Any]:
        event = load_event("api_describe.json")
        event["rawPath"] = path
        event["requestContext"]["http"].update(method=method, path=path)
        event["body"] = None if body is None else json.dumps(body)
        event["queryStringParameters"] = query
        response = self.invoke("api", event)
        return response["statusCode"], json.loads(response["body"])

    def depth(self, queue: str) -> int:
        attrs = self.sqs.get_queue_attributes(QueueUrl=self.stack.queues[queue],
                                              AttributeNames=["ApproximateNumberOfMessages",
                                                              "ApproximateNumberOfMessagesNotVisible"])
        return sum(int(v) for v in attrs["Attributes"].values())
