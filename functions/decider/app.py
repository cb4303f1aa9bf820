"""Decider: SQS batch of inbound messages -> load, decide, commit, effects (orbit.service.engine.Engine).

Records are grouped by execution (`Engine.handle_batch`: one load and one
commit per execution and batch); the per-record outcome is then handed to
powertools' BatchProcessor so only failed records return to the queue
(ReportBatchItemFailures). A body that is not a valid message fails its own
record only and reaches the DLQ after maxReceiveCount.
"""

from __future__ import annotations

import os
import time
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from orbit.aws.lambda_tracer import LambdaTracer
from orbit.aws.observability import publish
from orbit.aws.wiring import services

logger = Logger()
metrics = Metrics()
tracer = LambdaTracer()  # powertools' Tracer, made at the first invocation (cold start)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    # Imported by the first invocation, not at INIT (docs/decisions/sec-suite-cold-start.md).
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
    from orbit.adapters.sqs import decode_bodies, trace_of

    svc = services()
    # Inline steps run in this invocation, each attempt bounded by the time it has left.
    svc.run_inline(context.get_remaining_time_in_millis, getattr(context, "aws_request_id", None))
    records = event.get("Records", [])
    errors: dict[str, Exception] = {}
    # durable functions' invocation records, from the answer queue (orbit/aws/durable_answers.py)
    answer_queue = os.environ.get("ORBIT_DURABLE_ANSWER_QUEUE_ARN", "")
    answers = [r for r in records if answer_queue and r.get("eventSourceARN") == answer_queue]
    if answers:
        from orbit.aws.durable_answers import handle_answer_messages, record_body

        errors.update(handle_answer_messages(
            svc, [(r["messageId"], record_body(r["body"])) for r in answers],
            [int((r.get("attributes") or {}).get("ApproximateReceiveCount") or 1) for r in answers],
            context.invoked_function_arn))
        records = [r for r in records if not (answer_queue and r.get("eventSourceARN") == answer_queue)]
    parsed: list[tuple[str, dict[str, Any]]] = []
    received: list[int] = []  # ApproximateReceiveCount per body: > 1 marks a redelivery
    for r in records:
        try:  # a bundle (one execution's messages sent together) fails or succeeds as one record
            bodies = decode_bodies(r["body"], svc.payloads)
            trace = trace_of(r)  # the execution's trace continues in this decision's span
            if trace:
                bodies = [{**b, "trace": trace} for b in bodies]
            count = int((r.get("attributes") or {}).get("ApproximateReceiveCount") or 1)
            parsed.extend((r["messageId"], body) for body in bodies)
            received.extend(count for _ in bodies)
        except Exception as e:  # noqa: BLE001 - poison: fails this record only
            logger.error("unreadable decision message", message_id=r.get("messageId"), error=str(e))
            errors[r["messageId"]] = e
    # durable functions' messages (orbit/aws/durable.py): invoke the function, fire what is due
    durable = [i for i, (_, b) in enumerate(parsed) if b.get("kind") == "durable"]
    if durable:
        from orbit.aws.durable import handle_messages

        errors.update(handle_messages(svc, [parsed[i] for i in durable], [received[i] for i in durable],
                                      context.invoked_function_arn))
        keep = [i for i in range(len(parsed)) if i not in set(durable)]
        parsed, received = [parsed[i] for i in keep], [received[i] for i in keep]
    started = time.perf_counter()
    with svc.queues.batched():  # every decision's sends leave in one SendMessageBatch per queue
        failures = svc.engine.handle_batch([body for _, body in parsed], received)
    executions = len({b.get("execution_id") for _, b in parsed}) or 1
    logger.info("batch decided", messages=len(records), executions=executions,
                failed=len(failures) + len(errors))
    for pos, error in failures:
        message_id, body = parsed[pos]
        logger.warning("decision failed", execution_id=body.get("execution_id"), step=body.get("unit"),
                       kind=body.get("kind"), error=str(error))
        errors[message_id] = error
    # Watched by the template's DecisionErrors alarm (the messages are retried, then dead-lettered).
    metrics.add_metric(name="DecisionErrors", unit=MetricUnit.Count, value=len(failures) + len(errors))
    metrics.add_metric(name="DecisionLatency", unit=MetricUnit.Milliseconds,
                       value=(time.perf_counter() - started) * 1000 / executions)
    publish(metrics)

    def record_handler(record: Any) -> None:  # an SQSRecord
        if record.message_id in errors:
            raise errors[record.message_id]

    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    return dict(process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                         context=context))
