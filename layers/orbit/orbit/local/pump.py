"""Poll a queue the way a Lambda SQS event source mapping does.

One `poll_once()` receives up to BatchSize messages (10 per ReceiveMessage),
invokes the mapped handler with an SQS-shaped event, then:
- with `ReportBatchItemFailures`: deletes every message not named in
  `batchItemFailures`; a malformed response fails the whole batch (as Lambda);
- without it: deletes the batch on success;
- when the handler raises: deletes nothing.
Whatever is not deleted becomes visible again after the queue's visibility
timeout, and moto's redrive moves it to the DLQ once its receive count passes
`maxReceiveCount`: the same redelivery semantics as AWS, on virtual time.

Receives use WaitTimeSeconds=0, and `LocalCloud.pump_once` drains each queue
batch after batch before moving on, so the decider's queue fills with a whole
round of worker answers and is handed full batches. A fan-out can still make a
task queue 1,000 deep: moto's per-message scans that made that slow are cut by
`moto_speed.py` (and `clock.py`), not avoided by the pump.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .clock import visible_count
from .emulator import REGION
from .lambdas import Handler, invoke
from .resources import SqsMapping

log = logging.getLogger("orbit.local")


@dataclass
class PollResult:
    received: int = 0
    deleted: int = 0
    failed_ids: list[str] = field(default_factory=list)
    error: BaseException | None = None


def to_record(msg: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    """A ReceiveMessage result in the shape Lambda hands to an SQS-triggered function."""
    attrs = msg.get("Attributes") or {}
    return {
        "messageId": msg["MessageId"],
        "receiptHandle": msg["ReceiptHandle"],
        "body": msg["Body"],
        "attributes": {
            k: attrs[k]
            for k in (
                "ApproximateReceiveCount",
                "SentTimestamp",
                "SenderId",
                "ApproximateFirstReceiveTimestamp",
                "MessageGroupId",
                "MessageDeduplicationId",
                "SequenceNumber",
            )
            if k in attrs
        },
        "messageAttributes": {
            name: {
                "stringValue": v.get("StringValue"),
                "binaryValue": v.get("BinaryValue"),
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": v.get("DataType"),
            }
            for name, v in (msg.get("MessageAttributes") or {}).items()
        },
        "md5OfBody": msg.get("MD5OfBody") or hashlib.md5(msg["Body"].encode()).hexdigest(),  # noqa: S324
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": REGION,
    }


def failed_item_ids(response: Any, batch_ids: list[str]) -> list[str] | None:
    """The message ids to keep, from a handler's partial batch response.

    None means "the response is malformed": Lambda then treats the whole batch as failed.
    """
    if response is None:
        return []
    if not isinstance(response, dict):
        return None
    items = response.get("batchItemFailures")
    if items is None:
        return []
    if not isinstance(items, list):
        return None
    out = []
    for item in items:
        ident = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not ident or ident not in batch_ids:
            return None
        out.append(ident)
    return out


class QueuePoller:
    def __init__(self, mapping: SqsMapping, handler: Handler, sqs: Any) -> None:
        self.mapping = mapping
        self.handler = handler
        self.sqs = sqs
        self.invocations = 0
        # Held around this poller's receives and deletes when several invocations run at once:
        # moto's queue is not safe for concurrent receives (Lambda's pollers are one service).
        self.sqs_lock: Any = contextlib.nullcontext()
        # Wraps each invocation when set: `orbit dev` takes its engine lock around a decider's
        # invocation that runs on a thread of its own (local/dev_invocations.py).
        self.around: Callable[[Callable[[], Any]], Any] | None = None
        # Runs each invocation (with its deletes) elsewhere when set: `orbit dev` does, so the pump
        # goes on receiving, firing timers and deciding while a task or an inline step runs. It
        # says whether there is room for one more, and takes `settle` to run.
        self.spawn: Any = None

    def receive(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while len(out) < self.mapping.batch_size:
            got = self.sqs.receive_message(
                QueueUrl=self.mapping.queue.url,
                MaxNumberOfMessages=min(10, self.mapping.batch_size - len(out)),
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
                WaitTimeSeconds=0,
            ).get("Messages", [])
            out.extend(got)
            if len(got) < 10:
                break
        return out

    def poll_once(self) -> PollResult:
        if self.spawn is not None and not self.spawn.has_room(self):
            return PollResult()  # as many invocations run as this mapping may have: leave the rest
        with self.sqs_lock:
            if visible_count(self.mapping.queue.name) == 0:
                return PollResult()  # nothing to receive: skip the request (same outcome, no cost)
            msgs = self.receive()
        if not msgs:
            return PollResult()
        if self.spawn is not None:
            self.spawn.start(self, lambda: self.settle(msgs))
            return PollResult(received=len(msgs))
        return self.settle(msgs)

    def settle(self, msgs: list[dict[str, Any]]) -> PollResult:
        """Invoke the handler with the received batch, then delete what it did not fail."""
        result = PollResult(received=len(msgs))
        ids = [m["MessageId"] for m in msgs]
        event = {"Records": [to_record(m, self.mapping.queue.arn) for m in msgs]}
        self.invocations += 1
        try:
            if self.around is None:
                response = invoke(self.mapping.function, self.handler, event)
            else:
                response = self.around(lambda: invoke(self.mapping.function, self.handler, event))
        except BaseException as exc:
            # SystemExit or KeyboardInterrupt raised by a task or an inline step ends that
            # invocation only, as a Lambda runtime exiting would; Ctrl-C on the main thread
            # (`orbit run`) still stops the process.
            if isinstance(exc, KeyboardInterrupt) and threading.current_thread() is threading.main_thread():
                raise
            log.warning(
                "%s failed on a batch of %d from %s: %r",
                self.mapping.function.logical_id,
                len(msgs),
                self.mapping.queue.name,
                exc,
            )
            result.error, result.failed_ids = exc, ids
            return result
        if self.mapping.report_failures:
            failed = failed_item_ids(response, ids)
            if failed is None:
                log.warning(
                    "%s returned a malformed batchItemFailures response; the whole batch is retried",
                    self.mapping.function.logical_id,
                )
                failed = ids
        else:
            failed = []
        result.failed_ids = failed
        keep = set(failed)
        done = [
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
            for i, m in enumerate(msgs)
            if m["MessageId"] not in keep
        ]
        if done:
            with self.sqs_lock:
                self.sqs.delete_message_batch(QueueUrl=self.mapping.queue.url, Entries=done)
        result.deleted = len(done)
        return result
