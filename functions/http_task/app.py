"""The built-in `orbit.http` task: a worker on the `http` queue (off unless ORBIT_HTTP_ENABLED=true)."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger
from orbit import worker
from orbit.aws import httptask
from orbit.aws.lambda_tracer import LambdaTracer

logger = Logger()
tracer = LambdaTracer()  # powertools' Tracer, made at the first invocation (cold start)
CONFIG = httptask.HttpConfig.from_env(os.environ)


@worker.task("orbit.http")
def http_request(request: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    logger.info("http task", execution_id=ctx.execution_id, step=ctx.step, attempt=ctx.attempt)
    return httptask.call(request, CONFIG)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return worker.handler(event, context)
