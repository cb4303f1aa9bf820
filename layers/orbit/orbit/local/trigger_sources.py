"""SQS triggers on the local stack: the event source mappings Lambda would make, as pollers.

On AWS a registration maps the queue an sqs trigger names to the triggers function
(adapters/event_sources.py). Moto runs no Lambda, so here the same sync adds a `QueuePoller` of
that queue (batches of 10, partial batch failures) driving the template's TriggersFunction, and
removes it when no active workflow names the queue any more. `send_message` on the local queue
then starts executions as on AWS (docs/triggers.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orbit.core.definition.triggers import Trigger
from orbit.errors import OrbitError

from .pump import QueuePoller
from .resources import QueueInfo, SqsMapping

FUNCTION = "TriggersFunction"
SOURCE = "trigger-source:"  # the logical id of a queue an sqs trigger names (not the template's)


class LocalEventSources:
    def __init__(self, cloud: Any, queues: Callable[[], set[str]]) -> None:
        self.cloud, self._queues = cloud, queues

    def queue_problem(self, arn: str) -> str | None:
        """Why the queue `arn` cannot be read here (None: it can): asked at registration, before the
        definition is stored."""
        import boto3

        sqs = boto3.client("sqs")
        name, account = arn.rsplit(":", 1)[1], arn.split(":")[4]
        try:
            sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)
        except sqs.exceptions.QueueDoesNotExist:
            return (f"the queue does not exist on the local stack: create it first (boto3 create_queue "
                    f"at {self.cloud.emulator.endpoint_url})")
        return None

    def sync(
        self, workflow: str, triggers: dict[str, Trigger], former: dict[str, Trigger] | None = None
    ) -> None:
        import boto3

        dep = self.cloud.deployment
        fn = dep.functions.get(FUNCTION) if dep is not None else None
        if fn is None:
            raise OrbitError(f"sqs triggers need the template's {FUNCTION}; this template has none")
        wanted = self._queues()
        current = {
            p.mapping.queue.arn: p
            for p in self.cloud.pollers
            if p.mapping.queue.logical_id.startswith(SOURCE)
        }
        sqs = boto3.client("sqs")
        for arn in sorted(wanted - set(current)):
            name, account = arn.rsplit(":", 1)[1], arn.split(":")[4]
            try:
                url = sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
            except sqs.exceptions.QueueDoesNotExist:
                raise OrbitError(
                    f"sqs trigger: queue {arn} does not exist on the local stack; create it "
                    f"first (boto3 create_queue at {self.cloud.emulator.endpoint_url})"
                ) from None
            attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])["Attributes"]
            info = QueueInfo(SOURCE + name, name, url, arn, int(attrs.get("VisibilityTimeout", 30)))
            mapping = SqsMapping(fn, info, batch_size=10, report_failures=True)
            self.cloud.pollers.append(QueuePoller(mapping, self.cloud.handlers[FUNCTION], sqs))
        for arn in set(current) - wanted:
            self.cloud.pollers.remove(current[arn])


def attach(stack: Any) -> None:
    """The local stack's engine maps SQS triggers to pollers instead of Lambda (see above)."""
    from orbit.aws.triggers import sqs_trigger_queues

    engine = stack.services.engine
    engine.trigger_sources = LocalEventSources(stack.cloud, lambda: sqs_trigger_queues(engine))


def put_local_event(stack: Any, raw: bytes) -> tuple[int, Any]:
    """`POST /_local/events` {bus, source, detail_type, detail} on `orbit dev`: one event on the local
    EventBridge (moto matches the rules; the pump starts what they target)."""
    import json

    import boto3

    from orbit.adapters.events import put_event

    try:
        body = json.loads(raw or b"{}")
        bus, source, kind, detail = body["bus"], body["source"], body["detail_type"], body["detail"]
        if not all(isinstance(v, str) and v for v in (bus, source, kind)) or not isinstance(detail, dict):
            raise ValueError
    except (ValueError, KeyError, TypeError, RecursionError):
        return 400, {
            "error": {
                "code": "VALIDATION_ERROR",
                "message": "body: {bus, source, detail_type: strings, detail: an object}",
            }
        }
    res = put_event(boto3.client("events"), bus, source, kind, detail)
    return (
        (200, res)
        if "event_id" in res
        else (400, {"error": {"code": "EVENT_REFUSED", "message": res["error"]}})
    )
