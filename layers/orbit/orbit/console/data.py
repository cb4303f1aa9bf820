"""What the console computes on its server side, from the API's answers only (so it works the same
against `orbit dev` and a deployed stack): waiting lines, and a signal payload checked against
the signal's contract before it is sent. History is read without the values kept in S3."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict
from typing import Any
from urllib.parse import quote

Backend = Callable[[str, str, Any], tuple[int, Any]]
PAGE = 1000
CACHED_EXECUTIONS = 32
CACHED_WORKFLOWS = 256
# Values kept in S3 are never read for a page or the timeline: the browser asks for one event's
# values (GET /executions/{id}/history/{seq}) when its payload is expanded.
INLINE = "&values=inline"


class ConsoleData:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._lock = threading.Lock()
        # execution id -> its events so far (a history only grows, so later reads ask for what is new)
        self._events: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        # execution id -> the build it was created on (named by its first event, so it never changes)
        self._workflows: OrderedDict[str, Any] = OrderedDict()

    def workflow(self, eid: str) -> tuple[int, Any]:
        """`GET /executions/{id}/workflow`, read once per execution (a refusal is not kept)."""
        with self._lock:
            if eid in self._workflows:
                self._workflows.move_to_end(eid)
                return 200, self._workflows[eid]
        status, wf = self.backend("GET", f"/executions/{quote(eid, safe='')}/workflow", None)
        if status == 200:
            with self._lock:
                self._workflows[eid] = wf
                while len(self._workflows) > CACHED_WORKFLOWS:
                    self._workflows.popitem(last=False)
        return status, wf

    def history(self, eid: str) -> tuple[int, Any]:
        with self._lock:
            events = list(self._events.get(eid, []))
        while True:
            after = events[-1]["seq"] if events else 0
            path = f"/executions/{quote(eid, safe='')}/history?after_seq={after}&limit={PAGE}{INLINE}"
            status, page = self.backend("GET", path, None)
            if status != 200:
                return status, page
            events += page
            if len(page) < PAGE:
                break
        with self._lock:
            self._events[eid] = events
            self._events.move_to_end(eid)
            while len(self._events) > CACHED_EXECUTIONS:
                self._events.popitem(last=False)
        return 200, events

    def live(self, eid: str) -> tuple[int, Any]:
        """What the execution page refreshes: its describe, what each unfinished step waits for,
        its hooks (name, resumed: never the token) and its Gantt rows, all from one read of what is new."""
        from orbit.console.gantt import gantt
        from orbit.local.waiting import waiting

        status, describe = self.backend("GET", f"/executions/{quote(eid, safe='')}", None)
        if status != 200:
            return status, describe
        status, events = self.history(eid)
        if status != 200:
            return status, events
        hooks: dict[str, dict[str, Any]] = {}
        for ev in events:
            if ev.get("type") == "HookCreated":
                hooks[ev["name"]] = {"name": ev["name"], "resumed": False}  # never the token: a credential
            elif ev.get("type") == "HookResumed" and ev.get("name") in hooks:
                hooks[ev["name"]]["resumed"] = True
        return 200, {
            "describe": describe,
            "waiting": [asdict(w) for w in waiting(describe, events)],
            "hooks": list(hooks.values()),
            "gantt": gantt(events, int(time.time() * 1000),  # noqa: TID251 - open bars end now
                           running=describe.get("status") in ("RUNNING", "COMPENSATING")),
            "last_seq": events[-1]["seq"] if events else 0,
        }

    def step(self, eid: str, unit: str) -> tuple[int, Any]:
        """One unit's attempts, input, output, error and timing (orbit/console/steps.py)."""
        from orbit.console.steps import step_detail

        status, events = self.history(eid)
        if status != 200:
            return status, events
        detail = step_detail(events, unit)
        if detail is None:
            message = f"{eid} has no event for step {unit!r} yet"
            return 404, {"error": {"code": "NOT_FOUND", "message": message}}
        return 200, detail

    def history_page(self, eid: str, after_seq: int, limit: int, types: set[str]) -> tuple[int, Any]:
        """Events after `after_seq`, at most `limit`; with `types`, only those (read from the whole
        history, which this server keeps per execution and extends with what is new)."""
        if not types:
            return self.backend(
                "GET",
                f"/executions/{quote(eid, safe='')}/history?after_seq={after_seq}&limit={limit}{INLINE}",
                None,
            )
        status, events = self.history(eid)
        if status != 200:
            return status, events
        return 200, [e for e in events if e["seq"] > after_seq and e.get("type") in types][:limit]

    def check_start(self, workflow: str, body: Any) -> tuple[int, Any]:
        """200 `{"ok": true}` when `body["input"]` meets the input schema of `workflow` (the build
        `body["version"]`/`body["build"]` names); 400 with the refusal, word for word."""
        from orbit.core.definition.contracts import check_schema

        body = body if isinstance(body, dict) else {}
        q = "&".join(f"{k}={quote(str(body[k]), safe='')}" for k in ("version", "build") if body.get(k))
        path = f"/workflows/{quote(workflow, safe='')}" + ("?" + q if q else "")
        status, wf = self.backend("GET", path, None)
        if status != 200:
            return status, wf
        definition = wf.get("definition") or {}
        schema = definition.get("input") if wf.get("kind") == "definition" else wf.get("input")
        err = check_schema(schema, body.get("input"), "INPUT_CONTRACT_VIOLATION", label="input",
                           schema_path="input")
        if err is not None:
            return 400, {"error": {"code": err.code, "message": err.message, "details": err.details}}
        return 200, {"ok": True, "schema": schema is not None}

    def check_signal(self, eid: str, name: str, payload: Any) -> tuple[int, Any]:
        """200 `{"ok": true}` when the payload meets the signal's schema; 400 with the refusal."""
        from orbit.core.definition.contracts import check_schema

        status, wf = self.workflow(eid)
        if status != 200:
            return status, wf
        signals = wf.get("signals") or {}
        if wf.get("kind") == "definition" and name not in signals:
            known = ", ".join(sorted(signals)) or "none"
            return 400, {
                "error": {
                    "code": "VALIDATION_ERROR",
                    "message": f"workflow {wf.get('name')!r} has no signal {name!r}; it knows: {known}",
                }
            }
        err = check_schema(signals.get(name), payload, "PAYLOAD_REFUSED", label="payload",
                           schema_path=f"signals.{name}.schema")
        if err is not None:
            return 400, {"error": {"code": "PAYLOAD_REFUSED", "message": err.message, "details": err.details}}
        return 200, {"ok": True}
