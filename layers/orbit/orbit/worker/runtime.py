"""Where the worker SDK meets SQS: the Lambda batch handler and the long-polling loop.

`orbit.worker.handler` and `orbit.worker.run` delegate here; the clients come
from `orbit.aws.wiring` (the one place that reads the environment).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from orbit.worker.dedupe import Delivery, TaskDeferred
from orbit.worker.sdk import Worker

log = logging.getLogger("orbit.worker")


def _queue_url(sqs: Any, arn: str, known: list[str]) -> str:
    """The queue URL for an event source ARN (known URLs first: no request on the hot path)."""
    name = arn.rsplit(":", 1)[-1]
    for url in known:
        if url.rstrip("/").rsplit("/", 1)[-1] == name:
            return url
    account = arn.split(":")[4]
    url = sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
    known.append(url)
    return url


def lambda_batch(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda handler for a worker queue (SQS event source with ReportBatchItemFailures).

    Each record is one task message; powertools' BatchProcessor reports the
    records that raised (a busy key, a poison body) so SQS retries only those,
    and sends them to the queue's DLQ after maxReceiveCount.
    """
    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

    from orbit.adapters.sqs import decode_body, trace_of
    from orbit.aws.wiring import services
    from orbit.core.tracing import BODY_KEY

    svc = services()
    worker: Worker = svc.worker
    logger = Logger(child=True)  # shares the handler's powertools Logger (service, Lambda context)
    known = [svc.settings.decision_url, svc.settings.default_task_url, *svc.settings.task_urls.values()]
    # Our claim must outlive the invocation only if the function dies: lease = time left + a margin.
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    lease_ms = (remaining() + 10_000) if callable(remaining) else worker.lease_ms

    def record_handler(record: SQSRecord) -> None:
        url = _queue_url(svc.sqs, record.event_source_arn, known)

        def extend(seconds: int) -> None:
            svc.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=record.receipt_handle,
                                              VisibilityTimeout=seconds)

        body = decode_body(record.body, svc.payloads)
        trace = trace_of(record.raw_event)
        if trace:
            body = {**body, BODY_KEY: trace}
        # Every line logged while this record runs (the task's own included) names its execution and step.
        logger.append_keys(execution_id=body.get("execution_id"), step=body.get("unit"),
                           attempt=body.get("attempt"))
        try:
            # the receive count and send time tell a possible duplicate (worker/dedupe.py)
            worker.process(body, extend, lease_ms, Delivery.of(record.raw_event.get("attributes")))
            logger.info("task message handled", kind=body.get("kind"), task=body.get("task"))
        finally:
            logger.remove_keys(["execution_id", "step", "attempt"])

    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    with worker.batch():
        result = process_partial_response(event=event, record_handler=record_handler,
                                          processor=processor, context=context)
    return dict(result)


def poll(queue: str = "default", *, env: Mapping[str, str] | None = None, wait_s: int = 20,
         max_messages: int = 10, visibility_s: int = 300, stop: threading.Event | None = None,
         max_polls: int | None = None) -> int:
    """Long-poll a worker queue (a name from ORBIT_TASK_QUEUES, or a URL) outside Lambda.

    A message is deleted only after its result was reported; a worker that dies
    leaves it to reappear after `visibility_s` (the claim's lease is the same),
    when another worker picks it up. Returns how many messages were handled;
    stops when `stop` is set or after `max_polls` receives.
    """
    from orbit.adapters.sqs import decode_body, trace_of
    from orbit.aws.wiring import build_services, services
    from orbit.core.tracing import BODY_KEY

    svc = services() if env is None else build_services(env)
    worker: Worker = svc.worker
    url = queue if "://" in queue else svc.queues.task_url(queue)
    handled = polls = 0
    while not (stop is not None and stop.is_set()) and (max_polls is None or polls < max_polls):
        polls += 1
        got = svc.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=max_messages, WaitTimeSeconds=wait_s,
                                      VisibilityTimeout=visibility_s,
                                      AttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
                                      MessageAttributeNames=["All"]).get("Messages", [])
        for m in got:
            def extend(seconds: int, handle: str = m["ReceiptHandle"]) -> None:
                svc.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle,
                                                  VisibilityTimeout=seconds)

            try:
                body = decode_body(m["Body"], svc.payloads)
                trace = trace_of(m)
                worker.process({**body, BODY_KEY: trace} if trace else body, extend, visibility_s * 1000,
                               Delivery.of(m.get("Attributes")))
            except TaskDeferred as e:  # a possible duplicate: it comes back once its answer had time
                log.info("%s", e)
                continue
            except Exception:  # left on the queue: SQS redelivers it, then moves it to the DLQ
                log.exception("task message %s failed; it will be redelivered", m.get("MessageId"))
                continue
            svc.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
            handled += 1
    return handled
