"""The Lambda REST paths of durable functions, as boto3's `lambda` client calls them
(`AWS_ENDPOINT_URL_LAMBDA` pointing here): `Invoke` (2015-03-31) and the durable execution API
(2025-12-01). `route` is one request in, one answer out (status, headers, body); the server in
front of it (`orbit.local.durable_server`, `orbit dev`) owns the socket, the runtime owns the
threads. Timestamps go out as epoch seconds (the rest-json default), errors as Lambda's
(`X-Amzn-ErrorType`, `{"Type", "message"}`).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, unquote

from orbit.core.history.durable import TERMINAL_EXECUTION, DurableState
from orbit.service.durable import DurableApiError

MAX_BODY = 6 * 1024 * 1024  # a request body larger than Lambda's own payload limit is refused
Answer = tuple[int, dict[str, str], bytes]

_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    ("POST", re.compile(r"^/2015-03-31/functions/([^/]+)/invocations$"), "invoke"),
    ("POST", re.compile(r"^/2025-12-01/durable-executions/([^/]+)/checkpoint$"), "checkpoint"),
    ("GET", re.compile(r"^/2025-12-01/durable-executions/([^/]+)/state$"), "state"),
    ("GET", re.compile(r"^/2025-12-01/durable-executions/([^/]+)/history$"), "history"),
    ("POST", re.compile(r"^/2025-12-01/durable-executions/([^/]+)/stop$"), "stop"),
    ("GET", re.compile(r"^/2025-12-01/durable-executions/([^/]+)$"), "get"),
    ("GET", re.compile(r"^/2025-12-01/functions/([^/]+)/durable-executions$"), "list"),
    (
        "POST",
        re.compile(r"^/2025-12-01/durable-execution-callbacks/([^/]+)/(succeed|fail|heartbeat)$"),
        "callback",
    ),
]


def handles(method: str, path: str) -> bool:
    p = path.split("?", 1)[0]
    return any(m == method and rx.match(p) for m, rx, _ in _ROUTES)


def route_name(method: str, path: str) -> str | None:
    """The operation a request calls (`checkpoint`, `state`, `invoke`, ...), or None."""
    p = path.split("?", 1)[0]
    return next((name for m, rx, name in _ROUTES if m == method and rx.match(p)), None)


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Answer:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(body).encode()


def error(e: DurableApiError) -> Answer:
    return _json(e.status, {"Type": "User", "message": str(e)}, {"X-Amzn-ErrorType": e.code})


def seconds(value: Any) -> Any:
    """Every `...Timestamp` (epoch ms inside Orbit) as epoch seconds, recursively."""
    if isinstance(value, dict):
        return {
            k: (v / 1000 if k.endswith("Timestamp") and isinstance(v, int) else seconds(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [seconds(v) for v in value]
    return value


def _body(raw: bytes) -> Any:
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        raise DurableApiError("InvalidRequestContentException", "the request body is not JSON") from None


def route(rt: Any, method: str, path: str, headers: dict[str, str], raw: bytes) -> Answer:
    """Answer one request. `rt` is the runtime (`orbit.local.durable_runtime.DurableRuntime`)."""
    p, _, qs = path.partition("?")
    q = {k: (",".join(v) if k == "Statuses" else v[0]) for k, v in parse_qs(qs).items()}
    h = {k.lower(): v for k, v in headers.items()}
    try:
        if len(raw) > MAX_BODY:
            raise DurableApiError("RequestTooLargeException", f"request body over {MAX_BODY} bytes", 413)
        for m, rx, name in _ROUTES:
            hit = rx.match(p) if m == method else None
            if hit:
                return _dispatch(rt, name, [unquote(g) for g in hit.groups()], q, h, raw)
        raise DurableApiError("ResourceNotFoundException", f"no route {method} {p}", 404)
    except DurableApiError as e:
        return error(e)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
        # a value of a shape no check above foresaw: one line naming the call, never a traceback
        name = type(e).__name__
        return error(DurableApiError("InvalidParameterValueException", f"{method} {p}: {name}: {e}"[:300]))


def _dispatch(
    rt: Any, name: str, args: list[str], q: dict[str, str], h: dict[str, str], raw: bytes
) -> Answer:
    svc = rt.service
    if name == "invoke":
        kind = h.get("x-amz-invocation-type", "RequestResponse")
        if kind not in ("RequestResponse", "Event", "DryRun"):
            raise DurableApiError("InvalidParameterValueException", f"invalid X-Amz-Invocation-Type {kind!r}")
        if kind == "DryRun":
            svc.function(args[0])
            return 204, {}, b""
        payload = raw.decode("utf-8", "replace") if raw else None
        s = rt.invoke(args[0], payload, kind == "RequestResponse", h.get("x-amz-durable-execution-name"))
        hdr = {"X-Amz-Durable-Execution-Arn": s.arn, "X-Amz-Executed-Version": "$LATEST"}
        if kind == "Event":
            return 202, hdr, b""
        if s.status == "SUCCEEDED":
            return 200, {**hdr, "Content-Type": "application/json"}, (s.result or "null").encode()
        if s.status in TERMINAL_EXECUTION:
            err = s.error or {}
            body = {"errorType": err.get("ErrorType", s.status), "errorMessage": err.get("ErrorMessage", "")}
            return _json(200, body, {**hdr, "X-Amz-Function-Error": "Unhandled"})
        return 200, hdr, b""
    if name == "checkpoint":
        b = _body(raw)
        token = b.get("CheckpointToken")
        if not isinstance(token, str):
            raise DurableApiError("InvalidParameterValueException", "CheckpointToken is required")
        ct = b.get("ClientToken")
        return _json(
            200,
            seconds(
                rt.checkpoint(args[0], token, ct if isinstance(ct, str) else None, b.get("Updates") or [])
            ),
        )
    if name == "state":
        max_items = int(q["MaxItems"]) if q.get("MaxItems", "").isdigit() else None
        return _json(
            200, seconds(svc.state_page(args[0], q.get("CheckpointToken", ""), q.get("Marker"), max_items))
        )
    if name == "get":
        return _json(
            200, seconds(describe(svc, svc.load(args[0])[0], q.get("IncludeExecutionData") != "false"))
        )
    if name == "history":
        s, _ = svc.load(args[0])
        return _json(200, seconds(history(s, q)))
    if name == "stop":
        b = _body(raw)
        s = rt.stop(args[0], b if b else None)
        return _json(200, {"StopTimestamp": (s.end_ms or 0) / 1000})
    if name == "list":
        return _json(200, seconds(listing(svc, args[0], q)))
    if name == "callback":
        cid, what = args
        if what == "succeed":
            rt.callback(cid, "success", raw.decode("utf-8", "replace") if raw else None, None)
        elif what == "fail":
            b = _body(raw)
            rt.callback(cid, "failure", None, b if isinstance(b, dict) else {})
        else:
            rt.callback(cid, "heartbeat", None, None)
        return _json(200, {})
    raise DurableApiError("ResourceNotFoundException", f"no operation {name}", 404)


def describe(svc: Any, s: DurableState, data: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "DurableExecutionArn": s.arn,
        "DurableExecutionName": s.name,
        "FunctionArn": svc.function_arn(s.function),
        "Status": s.status,
        "StartTimestamp": s.start_ms,
        "Version": "$LATEST",
    }
    if data:
        out["InputPayload"] = s.input
        if s.result is not None:
            out["Result"] = s.result
    if s.error is not None:
        out["Error"] = s.error
    if s.end_ms is not None:
        out["EndTimestamp"] = s.end_ms
    return out


def _strip_data(ev: dict[str, Any]) -> dict[str, Any]:
    out = dict(ev)
    for k, v in ev.items():
        if k.endswith("Details") and isinstance(v, dict):
            out[k] = {
                dk: (
                    {"Truncated": dv.get("Truncated", False)}
                    if isinstance(dv, dict) and dk in ("Input", "Result", "Error")
                    else dv
                )
                for dk, dv in v.items()
            }
    return out


def history(s: DurableState, q: dict[str, str]) -> dict[str, Any]:
    events = list(reversed(s.events)) if q.get("ReverseOrder") == "true" else list(s.events)
    if q.get("IncludeExecutionData") != "true":
        events = [_strip_data(e) for e in events]
    start = int(q["Marker"]) if q.get("Marker", "").isdigit() else 0
    n = max(1, min(int(q["MaxItems"]) if q.get("MaxItems", "").isdigit() else 1000, 1000))
    out: dict[str, Any] = {"Events": events[start : start + n]}
    if start + n < len(events):
        out["NextMarker"] = str(start + n)
    return out


def listing(svc: Any, function: str, q: dict[str, str]) -> dict[str, Any]:
    rows = svc.list_executions(function)
    statuses = set(q["Statuses"].split(",")) if q.get("Statuses") else None
    rows = [
        s
        for s in rows
        if (statuses is None or s.status in statuses)
        and (not q.get("DurableExecutionName") or s.name == q["DurableExecutionName"])
    ]
    rows.sort(key=lambda s: s.start_ms, reverse=q.get("ReverseOrder") != "false")
    start = int(q["Marker"]) if q.get("Marker", "").isdigit() else 0
    n = max(1, min(int(q["MaxItems"]) if q.get("MaxItems", "").isdigit() else 100, 1000))
    page = [
        {
            k: v
            for k, v in describe(svc, s, False).items()
            if k
            in (
                "DurableExecutionArn",
                "DurableExecutionName",
                "FunctionArn",
                "Status",
                "StartTimestamp",
                "EndTimestamp",
            )
        }
        for s in rows[start : start + n]
    ]
    out: dict[str, Any] = {"DurableExecutions": page}
    if start + n < len(rows):
        out["NextMarker"] = str(start + n)
    return out
