"""Orbit HTTP API (API Gateway HTTP API, IAM auth): routing lives in orbit.service.http."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from orbit.aws.lambda_tracer import LambdaTracer
from orbit.aws.observability import publish
from orbit.aws.wiring import services

logger = Logger()
metrics = Metrics()
tracer = LambdaTracer()  # powertools' Tracer, made at the first invocation (cold start)


@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from orbit.service.http import lambda_response  # the engine: imported by the first request

    svc = services()
    # A start decides inline: a first decision that fans out leaves in one SendMessageBatch per
    # queue (flushed before we answer; the start's commit re-sends them if this fails).
    with svc.queues.batched():
        response = lambda_response(svc.engine, event)
    logger.info("request", method=event.get("requestContext", {}).get("http", {}).get("method"),
                path=event.get("rawPath"), status=response["statusCode"])
    publish(metrics)  # a start decides inline: count its decision too
    return response
