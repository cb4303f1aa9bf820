"""Triggers: events a trigger's EventBridge rule sent to the trigger queue, and messages on the
queues SQS triggers name, become starts (orbit/aws/triggers.py, docs/triggers.md)."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from orbit.aws.lambda_tracer import LambdaTracer
from orbit.aws.observability import publish
from orbit.aws.wiring import services

logger = Logger()
metrics = Metrics()
tracer = LambdaTracer()


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from orbit.aws.triggers import handle_records  # at the first invocation, not the import (cold start)

    svc = services()
    try:
        with svc.queues.batched():  # a start's first dispatches leave in batches
            return handle_records(svc.engine, event, os.environ.get("ORBIT_TRIGGER_QUEUE_ARN", ""))
    finally:
        publish(metrics)  # TriggerDeadLettered, and the decisions of the starts made here
