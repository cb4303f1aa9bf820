"""HTTP routes for schedules (appended to orbit.api's routes):

    POST   /schedules                         {id, workflow, cron|every, ...}  -> 201 describe shape
    GET    /schedules?limit=&cursor=                                          -> 200 {schedules, next_cursor}
    GET    /schedules/{id}                                                    -> 200 describe shape
    PUT    /schedules/{id}                    the full new config              -> 200 describe shape
    DELETE /schedules/{id}                                                    -> 200 {}
    POST   /schedules/{id}/pause|resume       {note?}                          -> 200 describe shape
    POST   /schedules/{id}/trigger            {overlap?}                       -> 202 {execution_id|null}
    POST   /schedules/{id}/backfill           {start, end, overlap?}           -> 202 {execution_ids}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from orbit.errors import NotFound, OrbitError, ValidationError

Response = tuple[int, Any]


def _svc(engine: Any) -> Any:
    if getattr(engine, "schedules", None) is None:
        raise OrbitError("schedules are not configured on this deployment (no schedule group)")
    return engine.schedules


def _create(engine: Any, body: dict[str, Any], query: Mapping[str, str]) -> Response:
    return 201, _svc(engine).create(body)


def _list(engine: Any, body: dict[str, Any], query: Mapping[str, str]) -> Response:
    raw = query.get("limit") or "50"
    if not raw.isdigit() or not 1 <= int(raw) <= 100:
        raise ValidationError("must be an integer between 1 and 100", "query.limit")
    items, cursor = _svc(engine).list(int(raw), query.get("cursor") or None)
    return 200, {"schedules": items, "next_cursor": cursor}


def _describe(engine: Any, body: dict[str, Any], query: Mapping[str, str], sid: str) -> Response:
    return 200, _svc(engine).describe(sid)


def _update(engine: Any, body: dict[str, Any], query: Mapping[str, str], sid: str) -> Response:
    return 200, _svc(engine).update(sid, body)


def _delete(engine: Any, body: dict[str, Any], query: Mapping[str, str], sid: str) -> Response:
    _svc(engine).delete(sid)
    return 200, {}


def _action(engine: Any, body: dict[str, Any], query: Mapping[str, str], sid: str, action: str) -> Response:
    svc = _svc(engine)
    if action in ("pause", "resume"):
        return 200, getattr(svc, action)(sid, body.get("note") or "")
    if action == "trigger":
        return 202, {"execution_id": svc.trigger(sid, body.get("overlap"))}
    if action == "backfill":
        ids = svc.backfill(sid, body.get("start"), body.get("end"), body.get("overlap"))
        return 202, {"execution_ids": ids}
    raise NotFound(f"no schedule action {action!r}; one of pause, resume, trigger, backfill")


ROUTES: list[tuple[str, re.Pattern[str], Callable[..., Response]]] = [
    ("POST", re.compile(r"/schedules"), _create),
    ("GET", re.compile(r"/schedules"), _list),
    ("GET", re.compile(r"/schedules/([^/]+)"), _describe),
    ("PUT", re.compile(r"/schedules/([^/]+)"), _update),
    ("DELETE", re.compile(r"/schedules/([^/]+)"), _delete),
    ("POST", re.compile(r"/schedules/([^/]+)/([a-z]+)"), _action),
]
