"""HTTP routes for bulk actions (appended to orbit.service.http's routes; service/batches.py):

    POST /batches/{action} {where, id?, reason?, signal?, payload?, from_step?, force?}
                                                                  -> 202 the batch (describe shape)
    POST /batches/preview  {where}                                -> 200 {count, capped, cap, first}
    GET  /batches/{id}                                            -> 200 {id, action, where, status,
                                                                     seen, acted, skipped, failed, ...}
    POST /batches/{id}/stop                                       -> 200 the batch, STOPPED

`action`: cancel, signal (with `signal`, `payload`), pause, unpause, redrive, fork (with
`from_step`). It is in the path so that IAM can grant each bulk action on its own (a role may
pause in bulk but not cancel). A filter that would read the whole table is a 400 naming the
index it lacks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from orbit.errors import OrbitError, ValidationError

Response = tuple[int, Any]


def _svc(engine: Any) -> Any:
    if getattr(engine, "batches", None) is None:
        raise OrbitError("bulk actions are not configured on this engine")
    return engine.batches


def _where(body: dict[str, Any]) -> str:
    where = body.get("where")
    if not isinstance(where, str) or not where.strip():
        raise ValidationError("a filter is required (e.g. \"status = RUNNING AND workflow = orders\"): a "
                              "bulk action never acts on every execution by default", "body.where")
    return where


def _create(engine: Any, body: dict[str, Any], query: Mapping[str, str], action: str) -> Response:
    if body.get("action", action) != action:
        raise ValidationError(f"the path says {action!r}, the body {body.get('action')!r}", "body.action")
    batch_id = body.get("id")
    if batch_id is not None and not isinstance(batch_id, str):
        raise ValidationError("must be a string", "body.id")
    args = {k: body[k] for k in ("reason", "signal", "payload", "from_step", "force") if k in body}
    return 202, _svc(engine).create(action, _where(body), args, batch_id)


def _preview(engine: Any, body: dict[str, Any], query: Mapping[str, str]) -> Response:
    return 200, _svc(engine).preview(_where(body))


def _describe(engine: Any, body: dict[str, Any], query: Mapping[str, str], batch_id: str) -> Response:
    return 200, _svc(engine).describe(batch_id)


def _stop(engine: Any, body: dict[str, Any], query: Mapping[str, str], batch_id: str) -> Response:
    return 200, _svc(engine).stop(batch_id)


BATCH_ROUTES: list[tuple[str, re.Pattern[str], Callable[..., Response]]] = [
    ("POST", re.compile(r"/batches/preview"), _preview),  # before /batches/{action}
    ("POST", re.compile(r"/batches/([^/]+)"), _create),
    ("GET", re.compile(r"/batches/([^/]+)"), _describe),
    ("POST", re.compile(r"/batches/([^/]+)/stop"), _stop),
]
