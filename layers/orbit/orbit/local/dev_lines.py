"""`orbit dev`'s start lines for executions not started by `POST /executions`: a fork, a redrive
(the same id starts again), a schedule's run, a bulk action's fork. Each gets the `started` line
the others get, and joins the executions whose `ended` line the server prints (devserver.py).

Forks and redrives are seen in the API answer. A schedule's runs start in the decider: after the
pump handled messages (at most every `EVERY_S` of wall time, so a wide fan-out is not slowed), the
newest `LOOK` executions are listed, and a top-level one (no parent, or a schedule as parent)
created since the server started and not reported yet gets its line.
"""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import unquote

EVERY_S = 0.5
LOOK = 20
_RECOVERY = re.compile(r"/executions/([^/]+)/(fork|redrive)")


class StartLines:
    def __init__(self, stack: Any, running: dict[str, str], say: Any) -> None:
        self.stack, self.running, self.say = stack, running, say
        self.since_ms = stack.now_ms()
        self.reported: set[str] = set()
        self._looked = 0.0

    def started(self, eid: str, workflow: str, how: str = "") -> None:
        self.reported.add(eid)
        self.running[eid] = workflow
        self.say(f"started {workflow} {eid}{how}")

    def answered(self, method: str, path: str, status: int, body: Any) -> None:
        """A fork's or a redrive's answer: its start line."""
        m = _RECOVERY.fullmatch(path.rstrip("/"))
        if method != "POST" or m is None or status not in (200, 201) or not isinstance(body, dict):
            return
        source, op = unquote(m.group(1)), m.group(2)
        eid = body.get("id")
        if not isinstance(eid, str) or eid in self.running:
            return
        try:
            workflow = str(self.stack.describe(eid).get("workflow"))
        except Exception:  # noqa: BLE001 - a line is not worth a failed request
            return
        how = f" (fork of {source})" if op == "fork" else f" (redriven, redrive #{body.get('redrive_count')})"
        self.started(eid, workflow, how)

    def look(self, force: bool = False) -> None:
        """Start lines for new top-level executions started inside the engine (schedules)."""
        now = time.monotonic()
        if not force and now - self._looked < EVERY_S:
            return
        self._looked = now
        try:
            entries, _ = self.stack.engine.list(limit=LOOK)
        except Exception:  # noqa: BLE001
            return
        for e in reversed(entries):  # oldest first
            parent = e.parent_id or ""
            if (e.execution_id in self.reported or e.execution_id in self.running
                    or e.created_at_ms < self.since_ms or (parent and not parent.startswith("schedule:"))):
                continue
            how = f" (schedule {parent.removeprefix('schedule:')})" if parent else ""
            self.started(e.execution_id, e.workflow, how)
