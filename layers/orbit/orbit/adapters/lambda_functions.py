"""Lambda: invoke a deployed durable function (docs/durable-functions.md, "On AWS").

The one adapter through which Orbit calls Lambda. The decider invokes a durable function
asynchronously (`invoke_async`, `InvocationType=Event`): Lambda answers 202 at once and hands the
invocation's record (its answer `{Status, Result?, Error?}` or its failure) to the function's
asynchronous-invocation destination, Orbit's answer queue (orbit/aws/durable_answers.py,
docs/decisions/dur4-async-invoke.md). `invoke` (`RequestResponse`) waits for the answer; the
decider no longer uses it (it bounded a function's timeout by the decider's). A function error
(an exception the SDK did not turn into an answer, a timeout, the runtime exiting) comes back as
the crash Lambda reports (`X-Amz-Function-Error` and its `errorType`/`errorMessage`); a refusal
of the call itself (throttling, a function that does not exist, no permission) raises
`LambdaInvokeError`, so the message that asked for the invocation is retried by its queue.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from orbit.errors import OrbitError

MAX_ANSWER = 6 * 1024 * 1024  # Lambda's own synchronous response limit


class LambdaInvokeError(OrbitError):
    """Lambda refused the call (not the function's own failure)."""


class LambdaFunctions:
    def __init__(self, client: Any) -> None:
        self._lambda = client

    def _call(self, function: str, invocation_type: str, event: dict[str, Any]) -> dict[str, Any]:
        """Lambda's Invoke; a refusal (throttled, gone, no permission, too large) as `LambdaInvokeError`."""
        try:
            return dict(self._lambda.invoke(FunctionName=function, InvocationType=invocation_type,
                                            Payload=json.dumps(event).encode()))
        except ClientError as e:
            err = e.response.get("Error") or {}
            raise LambdaInvokeError(
                f"Lambda Invoke of {function}: {err.get('Code', 'error')}: {err.get('Message', '')}"[:300]
            ) from None
        except BotoCoreError as e:
            raise LambdaInvokeError(f"Lambda Invoke of {function}: {e}"[:300]) from None

    def invoke_async(self, function: str, event: dict[str, Any]) -> str:
        """Queue one invocation (`Event`): Lambda's request id. A refusal (throttled, gone, no
        permission, too large) raises `LambdaInvokeError`."""
        r = self._call(function, "Event", event)
        status = int(r.get("StatusCode") or 0)
        if status != 202:
            raise LambdaInvokeError(f"Lambda Invoke of {function}: status {status}, not 202 (queued)")
        return str((r.get("ResponseMetadata") or {}).get("RequestId") or "")

    def invoke(self, function: str, event: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        """(the handler's answer, None) or (None, the crash as `{ErrorType, ErrorMessage}`)."""
        r = self._call(function, "RequestResponse", event)
        raw = r["Payload"].read(MAX_ANSWER + 1) if r.get("Payload") is not None else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
            if not r.get("FunctionError"):
                return None, {"ErrorType": "Runtime.InvalidResponse",
                              "ErrorMessage": f"{function} answered a body that is not JSON"}
        if r.get("FunctionError"):
            b = body if isinstance(body, dict) else {}
            return None, {
                "ErrorType": str(b.get("errorType") or r["FunctionError"])[:200],
                "ErrorMessage": str(b.get("errorMessage") or "")[:1000],
            }
        return body, None
