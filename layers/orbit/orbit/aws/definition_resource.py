"""The Lambda side of `Custom::OrbitDefinition` and `Custom::OrbitTaskQueue` (service/
definition_resource.py): the stack's registry and routes, request records in the table, and the
answer PUT to CloudFormation's pre-signed ResponseURL with urllib (no dependency).

ORBIT_APP_QUEUE_PREFIX (template.yaml: `<Orbit stack>-app-`): an app's queue must be named with it.
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any


def put_response(url: str, response: dict[str, Any], timeout_s: float = 30.0) -> None:
    """PUT the answer; raises on a refusal or a network error, so Lambda retries the invocation
    (a replay then resends the recorded answer)."""
    body = json.dumps(response).encode()
    # The URL is pre-signed without a content type: sending one would break its signature.
    request = urllib.request.Request(url, data=body, method="PUT",
                                     headers={"Content-Type": "", "Content-Length": str(len(body))})
    with urllib.request.urlopen(request, timeout=timeout_s) as reply:
        if reply.status >= 300:
            raise OSError(f"CloudFormation refused the response: HTTP {reply.status}")


def handle(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    from orbit.adapters.dynamodb.routes import ResourceRequests
    from orbit.aws.wiring import services
    from orbit.service.definition_resource import handle as answer

    svc = services()
    requests = ResourceRequests(svc.dynamodb, svc.settings.table, svc.clock)
    return answer(event, svc.engine, svc.task_routes, requests, put_response,
                  os.environ.get("ORBIT_APP_QUEUE_PREFIX", ""))
