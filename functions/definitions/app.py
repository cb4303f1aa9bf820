"""Custom resources of apps' templates: `Custom::OrbitDefinition` and `Custom::OrbitTaskQueue`
(orbit/service/definition_resource.py). Its ARN is exported as `<Orbit stack>-DefinitionServiceToken`."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from orbit.aws.definition_resource import handle

logger = Logger()


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    logger.info("custom resource", request=event.get("RequestType"), resource=event.get("LogicalResourceId"),
                type=event.get("ResourceType"))
    return handle(event, context)
