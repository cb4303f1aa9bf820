"""Durable functions' API (docs/durable-functions.md, "On AWS"): a Lambda function URL with
`AuthType: AWS_IAM` in front of the Lambda durable execution REST paths.

Lambda verifies each request's SigV4 signature (service `lambda`, the URL's host) before this
handler runs, so AWS's SDK, its `lambda` client pointed here by `AWS_ENDPOINT_URL_LAMBDA`, is
accepted unchanged and an unsigned or badly signed request never reaches Orbit. A durable
function's own role may call only CheckpointDurableExecution and GetDurableExecutionState of its
own executions (`orbit.aws.durable.authorize`); routing lives in `orbit.service.durable_http`.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from orbit.aws.wiring import services

logger = Logger()


@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from orbit.aws.durable import url_response

    svc = services()
    durable = svc.durable
    durable.service.account = str(context.invoked_function_arn).split(":")[4]
    # not batched: a synchronous Invoke waits for the invocation its own message asks for
    answer = url_response(durable, event, durable.service.prefix,
                          context.get_remaining_time_in_millis() / 1000)
    logger.info("durable request", path=event.get("rawPath"), status=answer["statusCode"])
    return answer
