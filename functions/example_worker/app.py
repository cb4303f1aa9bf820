"""Example worker for the default task queue: replace these tasks with your own.

Each `@task` function takes (input, ctx) and returns a JSON value; raising
`orbit.TaskError(code, message, retryable=False)` fails the step for good.
"""

from __future__ import annotations

import hashlib
from typing import Any

from aws_lambda_powertools import Logger
from orbit import TaskError, worker
from orbit.aws.lambda_tracer import LambdaTracer

logger = Logger()
tracer = LambdaTracer()  # powertools' Tracer, made at the first invocation (cold start)


@worker.task("example.greet")
def greet(input: Any, ctx: worker.TaskContext) -> dict[str, str]:
    name = (input or {}).get("name")
    if not isinstance(name, str) or not name:
        raise TaskError("BAD_INPUT", "example.greet needs {name: string}", retryable=False)
    logger.info("greeting", execution_id=ctx.execution_id, step=ctx.step, attempt=ctx.attempt)
    return {"greeting": f"Hello, {name}!"}


@worker.task("example.checksum")
def checksum(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    """Hash a text (or a list of texts), heartbeating between items as a long task would."""
    texts = input.get("texts") if isinstance(input, dict) else None
    if not isinstance(texts, list):
        raise TaskError("BAD_INPUT", "example.checksum needs {texts: [string]}", retryable=False)
    digests = []
    for i, text in enumerate(texts):
        if ctx.cancelled:
            raise TaskError("CANCELLED", "the engine withdrew this attempt", retryable=False)
        digests.append(hashlib.sha256(str(text).encode()).hexdigest())
        ctx.heartbeat({"done": i + 1, "of": len(texts)})
    return {"sha256": digests}


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return worker.handler(event, context)
