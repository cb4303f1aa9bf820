"""HTTP API routing, independent of API Gateway: `handle_request(engine, method, path, body, query)`.

Used by the Lambda API handler (`lambda_response` turns an HTTP API v2 event
into a call) and by `orbit dev`'s local server. Routes:

    POST /executions                          {workflow, version?, input?, id?, priority?}  -> 201 {id}
                                              (priority 1..5: docs/flow-control.md)
    GET  /executions?workflow=&status=&limit=&cursor=          -> 200 {executions, next_cursor}
             &started_after=&started_before=&id_prefix=        (RFC 3339 or ms; a page may be short)
             &where=FILTER   (orbit/core/search.py: workflow, status, started, ended, id, attributes)
    GET  /executions/{id}?steps_after=&steps_limit=            -> 200 describe shape (+ steps_next)
    GET  /executions/{id}/workflow                             -> 200 the pinned build's source
    GET  /counts?workflow=                                     -> 200 {counts: {status: n}, cap}
    GET  /workflows                                            -> 200 {workflows: [...]}
    GET  /workflows/{name}?version=&build=                     -> 200 one build's source
    GET  /executions/{id}/history?after_seq=&limit=            -> 200 [{seq, timestamp_ms, type, ...}]
             &values=inline   (large values kept in S3 not read: null, paths in `stored_values`)
    GET  /executions/{id}/history/{seq}                        -> 200 one event, every value read

Reads are paged (docs/limits.md): history returns at most `limit` events (default 1000, max
10,000; a page shorter than the limit is the last), describe at most `steps_limit` units
(default 1000, max 10,000; `steps_next` continues), the list at most `limit` executions
(default 50, max 1000; `next_cursor` continues).
    POST /executions/{id}/signals/{name}      {payload?, id?}                -> 202 {id}
    POST /executions/{id}/signal-with-start   {workflow, signal, payload?, input?, version?, signal_id?}
                                              -> 202 {id, signal_id, started} (docs/triggers.md)
    POST /executions/{id}/cancel              {reason?, force?}              -> 202 {}
    POST /executions/{id}/redrive             {id?}  (request id: retries redrive once) -> 200
                                              {id, redrive_count, steps}
    POST /executions/{id}/fork                {from_step, id?, version?,     -> 201 {id}; 409 when steps it
                                               despite_compensation?}          reuses were compensated
    POST /executions/{id}/queries/{name}      {input?}                       -> 200 {result}
    POST /executions/{id}/updates/{name}      {input?, update_id?, timeout?} -> 200 {update_id, status,
                                              result, error} | 202 while not done (docs/updates.md)
    POST /executions/{id}/unpark                                             -> 202 {id}
    POST /executions/{id}/pause               {reason?}                      -> 202 {id}
    POST /executions/{id}/unpause             {reason?}                      -> 202 {id}
    POST /hooks/{token}                       {payload?}                     -> 202 {execution_id}
    POST /webhooks/{workflow}/{trigger}       any body, signed (X-Orbit-Signature)  -> 202 {status,
                                              execution_id}; 401 unsigned or badly signed, 413 over
                                              the trigger's max_bytes, 422 refused (docs/triggers.md)
    POST /definitions                         a definition object, or {text} -> 201 {name, version, hash}
    POST /definitions/{name}/retire           {version?} (every version when left out) -> 200
                                              {name, retired: [versions]}: new starts refused (409
                                              WORKFLOW_RETIRED), running executions finish
    /schedules...                             see orbit/service/http_schedules.py
    GET  /limits                                                             -> 200 {limits, rates, shared}:
                                              flow control's limits with their use now, and the
                                              deployment's task and queue limits (docs/flow-control.md)
    /batches...                               bulk actions: see orbit/service/http_batches.py

Errors: `{"error": {"code", "message", "problems"?}}` with 400 (malformed
request, invalid definition, payload refused, ids that do not fit, lone surrogates, JSON nested
deeper than `orbit.core.history.storable.MAX_DEPTH`), 413 (body over `MAX_BODY_BYTES`), 404
(unknown execution, workflow, hook, route), 405, 409 (execution exists with a different input,
hook already resumed, a signal or update id sent again with another name or payload,
signal/hook/cancel/unpark/pause for an execution that has ended, unpark of one that is not
parked, pause of one already paused, unpause of one that is not, a redrive refused, a start of a
retired version: WORKFLOW_RETIRED, a signal-with-start whose flow limit is full: LIMIT_FULL) and
500 for anything unexpected (logged, no internals leaked).
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

from orbit.core.flow.calls import priority_problem
from orbit.core.history.state import WORKFLOW_STATUSES
from orbit.core.history.storable import MAX_DEPTH, execution_id_problem, signal_id_problem, value_problem
from orbit.errors import (
    ExecutionEnded,
    ExecutionExists,
    HookAlreadyResumed,
    IdReused,
    LimitFull,
    NotFound,
    NotParked,
    OrbitError,
    PauseRefused,
    PayloadRefused,
    RedriveRefused,
    UnknownWorkflow,
    UserCodeStopped,
    ValidationError,
    WorkflowRetired,
)
from orbit.service.http_batches import BATCH_ROUTES
from orbit.service.http_schedules import ROUTES as SCHEDULE_ROUTES
from orbit.service.operations import HISTORY_PAGE, MAX_HISTORY_PAGE, MAX_STEPS_PAGE, STEPS_PAGE
from orbit.service.updates import ROUTE as UPDATE_ROUTE

log = logging.getLogger("orbit.service.http")
Response = tuple[int, Any]
MAX_BODY_BYTES = 6 * 1024 * 1024
"""A request body larger than this is a 413 (Lambda's own limit for a synchronous request is 6 MB)."""


def _start(engine: Any, body: dict[str, Any], query: Mapping[str, str]) -> Response:
    workflow = body.get("workflow")
    if not isinstance(workflow, str) or not workflow:
        raise ValidationError("is required (a registered workflow name)", "body.workflow")
    version = body.get("version")
    eid = body.get("id")
    if eid is not None and (problem := execution_id_problem(eid)):
        raise ValidationError(problem, "body.id")
    priority = body.get("priority")
    if problem := priority_problem(priority):
        raise ValidationError(problem, "body.priority")
    eid = engine.start(workflow, None if version is None else str(version), body.get("input"), eid,
                       priority=priority)
    return 201, {"id": eid}


def _where(query: Mapping[str, str]) -> str | None:
    """`where=`: a filter (orbit/core/search.py), parsed by the engine's list."""
    raw = query.get("where")
    return raw or None


def _instant(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name) or ""
    if not raw or raw.isdigit():
        return _int(query, name, 0, 0, 2**53) or None
    return instant(raw, f"query.{name}")


def instant(value: str | int | None, where: str) -> int | None:
    """A start-time bound: RFC 3339 (`2026-03-30T07:00:00Z`) or milliseconds since the epoch."""
    if value is None or isinstance(value, int) and not isinstance(value, bool):
        return value
    from orbit.core.schedule.times import parse_time

    try:
        return parse_time(value)
    except ValueError as e:
        raise ValidationError(str(e), where) from None


def _list(engine: Any, body: dict[str, Any], query: Mapping[str, str]) -> Response:
    limit = _int(query, "limit", 50, 1, 1000)
    status = query.get("status") or None
    if status is not None and status not in WORKFLOW_STATUSES:
        # an unknown status would list nothing and look like "no executions"
        raise ValidationError(
            f"unknown status {status!r}; one of {', '.join(WORKFLOW_STATUSES)}", "query.status"
        )
    id_prefix = query.get("id_prefix") or None
    if id_prefix is not None and len(id_prefix) > 256:
        raise ValidationError("must be at most 256 characters", "query.id_prefix")
    from orbit.core.search import FilterError

    try:
        entries, cursor = engine.list(
            query.get("workflow") or None, status, limit, query.get("cursor"),
            started_after_ms=_instant(query, "started_after"),
            started_before_ms=_instant(query, "started_before"), id_prefix=id_prefix, where=_where(query),
        )
    except FilterError as e:  # the filter's own problem, at the parameter that carried it
        raise ValidationError(e.problems[0].message, "query.where") from None
    return 200, {"executions": [e.to_dict() for e in entries], "next_cursor": cursor}


def _describe(engine: Any, body: dict[str, Any], query: Mapping[str, str], eid: str) -> Response:
    limit = _int(query, "steps_limit", STEPS_PAGE, 1, MAX_STEPS_PAGE)
    return 200, engine.describe(eid, query.get("steps_after") or None, limit)


def _counts(engine: Any, body: dict[str, Any], query: Mapping[str, str]) -> Response:
    return 200, engine.counts(query.get("workflow") or None)


def _limits(engine: Any, body: dict[str, Any], query: Mapping[str, str]) -> Response:
    return 200, engine.limits()  # flow control: every limit with its use now (docs/flow-control.md)


def _workflows(engine: Any, body: dict[str, Any], query: Mapping[str, str]) -> Response:
    return 200, {"workflows": engine.workflows()}


def _workflow_source(engine: Any, body: dict[str, Any], query: Mapping[str, str], name: str) -> Response:
    version, build = query.get("version"), query.get("build")
    if not version or not build:
        raise ValidationError("version and build are both required", "query")
    return 200, engine.workflow_source(name, version, build)


def _execution_workflow(engine: Any, body: dict[str, Any], query: Mapping[str, str], eid: str) -> Response:
    return 200, engine.execution_workflow(eid)


def _history(engine: Any, body: dict[str, Any], query: Mapping[str, str], eid: str) -> Response:
    limit = _int(query, "limit", HISTORY_PAGE, 1, MAX_HISTORY_PAGE)
    values = query.get("values") or "all"
    if values not in ("all", "inline"):
        raise ValidationError("must be `all` (the default) or `inline` (values kept in S3 left out)",
                              "query.values")
    return 200, engine.history(eid, _int(query, "after_seq", 0, 0, 2**62), limit, values == "all")


def _event(engine: Any, body: dict[str, Any], query: Mapping[str, str], eid: str, seq: str) -> Response:
    if not seq.isdigit() or len(seq) > 18:
        raise ValidationError("must be an event's seq (a positive integer)", "path.seq")
    return 200, engine.event(eid, int(seq))


def _signal(engine: Any, body: dict[str, Any], query: Mapping[str, str], eid: str, name: str) -> Response:
    signal_id = body.get("id")  # the caller's id for the signal makes a retried request idempotent
    if signal_id is not None and (problem := signal_id_problem(signal_id)):
        raise ValidationError(problem, "body.id")
    return 202, {"id": engine.signal(eid, name, body.get("payload"), signal_id)}


def _signal_with_start(engine: Any, body: dict[str, Any], query: Mapping[str, str], eid: str) -> Response:
    from orbit.service.signal_start import signal_with_start

    workflow, signal, version = body.get("workflow"), body.get("signal"), body.get("version")
    if not isinstance(workflow, str) or not workflow:
        raise ValidationError("is required (the workflow to start when the execution does not exist)",
                              "body.workflow")
    if not isinstance(signal, str) or not signal:
        raise ValidationError("is required (the signal's name)", "body.signal")
    signal_id = body.get("signal_id")
    if signal_id is not None and (problem := signal_id_problem(signal_id)):
        raise ValidationError(problem, "body.signal_id")
    return 202, signal_with_start(engine, eid, workflow, signal, body.get("payload"), body.get("input"),
                                  None if version is None else str(version), signal_id)


def _cancel(engine: Any, body: dict[str, Any], query: Mapping[str, str], eid: str) -> Response:
    force = body.get("force", False)
    if not isinstance(force, bool):
        raise ValidationError("must be true or false", "body.force")
    engine.cancel(eid, str(body.get("reason") or ""), force)
    return 202, {}


def _redrive(engine: Any, body: dict[str, Any], query: Mapping[str, str], eid: str) -> Response:
    request_id = body.get("id")  # the caller's id for this request: a retry redrives once
    if request_id is not None and (problem := signal_id_problem(request_id)):
        raise ValidationError(problem, "body.id")
    return 200, engine.redrive(eid, request_id)


def _fork(engine: Any, body: dict[str, Any], query: Mapping[str, str], eid: str) -> Response:
    step, new_id, version = body.get("from_step"), body.get("id"), body.get("version")
    if not isinstance(step, str) or not step:
        raise ValidationError("is required (the step to run again from)", "body.from_step")
    if new_id is not None and (problem := execution_id_problem(new_id)):  # the rule a start's id follows
        raise ValidationError(problem, "body.id")
    confirmed = body.get("despite_compensation", False)
    if not isinstance(confirmed, bool):
        raise ValidationError("must be true or false", "body.despite_compensation")
    return 201, {"id": engine.fork(eid, step, new_id, None if version is None else str(version), confirmed)}


def _query(engine: Any, body: dict[str, Any], query: Mapping[str, str], eid: str, name: str) -> Response:
    from orbit.service.queries import run_query

    return 200, {"result": run_query(engine, eid, name, body.get("input"))}


def _unpark(engine: Any, body: dict[str, Any], query: Mapping[str, str], eid: str) -> Response:
    return 202, {"id": engine.unpark(eid)}


def _pause(engine: Any, body: dict[str, Any], query: Mapping[str, str], eid: str) -> Response:
    return 202, {"id": engine.pause(eid, body.get("reason") or "")}


def _unpause(engine: Any, body: dict[str, Any], query: Mapping[str, str], eid: str) -> Response:
    return 202, {"id": engine.unpause(eid, body.get("reason") or "")}


def _resume(engine: Any, body: dict[str, Any], query: Mapping[str, str], token: str) -> Response:
    return 202, {"execution_id": engine.resume_hook(token, body.get("payload"))}


def _register(engine: Any, body: dict[str, Any], query: Mapping[str, str]) -> Response:
    from orbit.core.definition import load_definition, parse_definition
    from orbit.service.registration_checks import check_registration

    if isinstance(body.get("text"), str):
        definition = load_definition(body["text"])
    else:
        definition = parse_definition(body)
    check_registration(engine, definition)  # an inline step's timeout must fit in the decider's
    engine.registry.register(definition)
    from orbit.service.triggers import sync_triggers

    sync_triggers(engine, definition.name)  # its rules and queue mappings (docs/triggers.md)
    return 201, {"name": definition.name, "version": definition.version, "hash": definition.hash}


def _retire(engine: Any, body: dict[str, Any], query: Mapping[str, str], name: str) -> Response:
    version = body.get("version")
    if version is not None and (not isinstance(version, (str, int)) or isinstance(version, bool)
                                or not str(version)):
        raise ValidationError("must be a version (a string), or left out to retire every version",
                              "body.version")
    retire = getattr(engine.registry, "retire", None)
    if retire is None:
        raise ValidationError("this engine's registry cannot retire definitions", "path.name")
    versions = retire(name, None if version is None else str(version))
    from orbit.service.triggers import sync_triggers

    sync_triggers(engine, name)  # every version retired: its rules and queue mappings are removed
    return 200, {"name": name, "retired": versions}


_ROUTES: list[tuple[str, re.Pattern[str], Callable[..., Response]]] = [
    ("POST", re.compile(r"/executions"), _start),
    ("GET", re.compile(r"/executions"), _list),
    ("GET", re.compile(r"/executions/([^/]+)"), _describe),
    ("GET", re.compile(r"/executions/([^/]+)/history"), _history),
    ("GET", re.compile(r"/executions/([^/]+)/history/([^/]+)"), _event),
    ("GET", re.compile(r"/executions/([^/]+)/workflow"), _execution_workflow),
    ("GET", re.compile(r"/counts"), _counts),
    ("GET", re.compile(r"/workflows"), _workflows),
    ("GET", re.compile(r"/limits"), _limits),
    ("GET", re.compile(r"/workflows/([^/]+)"), _workflow_source),
    ("POST", re.compile(r"/executions/([^/]+)/signals/([^/]+)"), _signal),
    ("POST", re.compile(r"/executions/([^/]+)/signal-with-start"), _signal_with_start),
    ("POST", re.compile(r"/executions/([^/]+)/cancel"), _cancel),
    ("POST", re.compile(r"/executions/([^/]+)/redrive"), _redrive),
    ("POST", re.compile(r"/executions/([^/]+)/fork"), _fork),
    ("POST", re.compile(r"/executions/([^/]+)/queries/([^/]+)"), _query),
    ("POST", re.compile(r"/executions/([^/]+)/unpark"), _unpark),
    ("POST", re.compile(r"/executions/([^/]+)/pause"), _pause),
    ("POST", re.compile(r"/executions/([^/]+)/unpause"), _unpause),
    ("POST", re.compile(r"/hooks/([^/]+)"), _resume),
    ("POST", re.compile(r"/definitions"), _register),
    ("POST", re.compile(r"/definitions/([^/]+)/retire"), _retire),
]
_ROUTES += SCHEDULE_ROUTES
_ROUTES += BATCH_ROUTES  # bulk actions (service/http_batches.py)
_ROUTES.append((UPDATE_ROUTE[0], re.compile(UPDATE_ROUTE[1]), UPDATE_ROUTE[2]))  # docs/updates.md


_WEBHOOK = re.compile(r"/webhooks/([^/]+)/([^/]+)")  # docs/triggers.md: signed, not IAM-authorised


def handle_request(engine: Any, method: str, path: str, body: Any = None,
                   query: Mapping[str, str] | None = None,
                   headers: Mapping[str, str] | None = None) -> Response:
    """Route one request; never raises. `body` may be raw (str/bytes JSON) or already parsed;
    `headers` are read by webhook triggers only (their signature)."""
    method = method.upper()
    path = "/" + path.strip("/")
    if method == "POST" and (hook := _WEBHOOK.fullmatch(path)):
        from orbit.service.webhooks import handle_webhook

        raw = body if isinstance(body, (str, bytes)) or body is None else json.dumps(body).encode()
        try:
            return handle_webhook(engine, unquote(hook[1]), unquote(hook[2]), raw, headers)
        except Exception:
            log.exception("%s %s failed", method, path)
            return _error(500, "INTERNAL_ERROR", "the request failed; see the API function's logs")
    if isinstance(body, (str, bytes)) and len(body) > MAX_BODY_BYTES:
        return _error(413, "PAYLOAD_TOO_LARGE", f"request body: {len(body)} bytes; at most {MAX_BODY_BYTES}")
    allowed = []
    for route_method, pattern, fn in _ROUTES:
        m = pattern.fullmatch(path)
        if m is None:
            continue
        if route_method != method:
            allowed.append(route_method)
            continue
        try:
            return fn(engine, _parse_body(body), dict(query or {}), *(unquote(g) for g in m.groups()))
        except ValidationError as e:  # a query's answer that is not JSON data: its own code
            code = getattr(e, "code", "VALIDATION_ERROR")
            return _error(400, code, str(e), [p.to_dict() for p in e.problems])
        except UserCodeStopped as e:  # a query handler or update validator that looped or exited
            return _error(400, e.code, str(e))
        except PayloadRefused as e:
            return _error(400, "PAYLOAD_REFUSED", str(e), details=e.details)
        except WorkflowRetired as e:  # the workflow exists: refusing it is a conflict, not a 404
            return _error(409, WorkflowRetired.code, str(e))
        except (NotFound, UnknownWorkflow) as e:
            return _error(404, "NOT_FOUND", str(e))
        except (ExecutionExists, ExecutionEnded, HookAlreadyResumed, IdReused, NotParked, PauseRefused,
                RedriveRefused) as e:
            return _error(409, "CONFLICT", str(e))
        except LimitFull as e:  # a signal-with-start its flow limit refused (docs/flow-control.md)
            return _error(409, LimitFull.code, str(e))
        except OrbitError as e:
            log.exception("%s %s failed", method, path)
            return _error(500, type(e).__name__, str(e))
        except Exception:
            log.exception("%s %s failed", method, path)
            return _error(500, "INTERNAL_ERROR", "the request failed; see the API function's logs")
        except BaseException as e:  # only Stalled is answered; the rest goes on up
            from orbit.core.runtime.code.errors import Stalled  # not at import: a cold start's cost

            if not isinstance(e, Stalled):
                raise
            # workflow code a start decided at once ran without a durable call (orbit/service/stall.py)
            return _error(500, "USER_CODE_TIMEOUT", f"{method} {path}: {e}; nothing was recorded")
    if allowed:
        return _error(405, "METHOD_NOT_ALLOWED", f"{method} {path}: allowed {sorted(set(allowed))}")
    return _error(404, "NOT_FOUND", f"no route for {method} {path}")


def lambda_response(engine: Any, event: Mapping[str, Any]) -> dict[str, Any]:
    """API Gateway HTTP API (payload format 2.0) event -> Lambda proxy response."""
    http = event.get("requestContext", {}).get("http", {})
    body = event.get("body")
    if body is not None and event.get("isBase64Encoded"):
        body = base64.b64decode(body)
    status, payload = handle_request(engine, http.get("method", "GET"), event.get("rawPath", "/"), body,
                                     event.get("queryStringParameters") or {}, event.get("headers") or {})
    return {"statusCode": status, "headers": {"content-type": "application/json"},
            "body": json.dumps(payload, separators=(",", ":"), default=str)}


def _parse_body(body: Any) -> dict[str, Any]:
    if body is None or body == "" or body == b"":
        return {}
    if isinstance(body, (str, bytes)):
        try:
            body = json.loads(body)
        except ValueError as e:
            raise ValidationError(f"request body is not JSON: {e}", "body") from None
        except RecursionError:
            raise ValidationError(f"nested more than {MAX_DEPTH} levels deep", "body") from None
    if not isinstance(body, dict):
        raise ValidationError("request body must be a JSON object", "body")
    problem = value_problem(body, "body")  # lone surrogates, depth: refused before anything is recorded
    if problem:
        raise ValidationError(problem)
    return body


def _int(query: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"must be an integer, not {raw!r}", f"query.{name}") from None
    if not lo <= value <= hi:
        raise ValidationError(f"must be between {lo} and {hi}", f"query.{name}")
    return value


def _error(status: int, code: str, message: str, problems: list[dict[str, str]] | None = None,
           details: Any = None) -> Response:
    err: dict[str, Any] = {"code": code, "message": message}
    if problems:
        err["problems"] = problems
    if details is not None:
        err["details"] = details
    return status, {"error": err}
