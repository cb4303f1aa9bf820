"""The shop worker: Lambda handler for the app's task queue (tasks in shop/tasks.py).

`orbit` and `aws_lambda_powertools` come from Orbit's layer (the OrbitLayerArn parameter); the app
ships only its own code. `orbit.worker.handler` answers a batch with partial failures
(ReportBatchItemFailures). The worker logs through a child of the function's powertools Logger:
create one here (its service is POWERTOOLS_SERVICE_NAME).
"""

from __future__ import annotations

from typing import Any

import shop.tasks  # noqa: F401 - registers the shop.* tasks
from aws_lambda_powertools import Logger
from orbit import worker

logger = Logger()


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return worker.handler(event, context)
