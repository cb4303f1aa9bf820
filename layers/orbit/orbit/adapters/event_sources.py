"""The one adapter for AWS Lambda event source mappings: SQS triggers (docs/triggers.md, "SQS").

An sqs trigger names an existing queue; the stack's triggers function reads it through an event
source mapping (batches of 10, partial batch failures reported). `sync` makes the mappings of the
triggers function exactly the queues that the active workflows' sqs triggers name (`queues()`:
every such ARN, read from the registry), so registering, changing or retiring a workflow adds or
removes only what changed, and a queue two workflows name is mapped once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orbit.core.definition.triggers import Trigger

BATCH_SIZE = 10


NO_QUEUE = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
DENIED = ("AccessDenied", "AccessDeniedException", "KMS.AccessDeniedException")


class LambdaEventSources:
    def __init__(self, client: Callable[[], Any], function_arn: str, queues: Callable[[], set[str]],
                 sqs: Callable[[], Any] | None = None, prefix: str = "") -> None:
        self._client, self.function_arn, self._queues = client, function_arn, queues
        self._sqs, self.prefix = sqs, prefix

    def queue_problem(self, arn: str) -> str | None:
        """Why the triggers function could not read the queue `arn` (None: it can), asked at
        registration before the definition is stored: another region or account than the
        function's, a name without the stack's TriggerQueueNamePrefix (its role reads only those),
        or no such queue (GetQueueUrl). A throttled call is raised (the registration fails, 5xx)."""
        from botocore.exceptions import ClientError

        region, account, name = arn.split(":")[3:6]
        home = self.function_arn.split(":")[3:5]
        if [region, account] != home:
            return (f"the queue is in {region}/{account}; the triggers function reads queues of its own "
                    f"region and account ({'/'.join(home)}) only")
        if self.prefix and not name.startswith(self.prefix):
            return (f"Orbit may read only queues whose names start with {self.prefix!r} (the stack's "
                    "TriggerQueueNamePrefix): rename the queue or deploy with another prefix")
        if self._sqs is None:
            return None
        try:
            self._sqs().get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)
        except ClientError as e:
            code = str(e.response.get("Error", {}).get("Code", ""))
            if code in NO_QUEUE:
                return "the queue does not exist: create it first"
            if code in DENIED:
                return f"Orbit cannot read it ({code})"
            raise
        return None

    def sync(
        self, workflow: str, triggers: dict[str, Trigger], former: dict[str, Trigger] | None = None
    ) -> None:
        client = self._client()
        wanted = self._queues()
        seen: set[str] = set()
        marker: str | None = None
        while True:
            page = client.list_event_source_mappings(
                FunctionName=self.function_arn, **({"Marker": marker} if marker else {})
            )
            for m in page.get("EventSourceMappings", []):
                arn = str(m.get("EventSourceArn", ""))
                if arn in wanted and arn not in seen:
                    seen.add(arn)
                elif arn.startswith("arn:") and ":sqs:" in arn:
                    client.delete_event_source_mapping(UUID=m["UUID"])
            marker = page.get("NextMarker")
            if not marker:
                break
        for arn in sorted(wanted - seen):
            client.create_event_source_mapping(
                EventSourceArn=arn,
                FunctionName=self.function_arn,
                BatchSize=BATCH_SIZE,
                Enabled=True,
                FunctionResponseTypes=["ReportBatchItemFailures"],
            )
