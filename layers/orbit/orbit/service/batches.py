"""Bulk actions: cancel, signal, pause, unpause, redrive or fork every execution a filter matches.

A batch is a record in the Orbit table (`BATCH#<id>`, written only conditionally on its `rev`,
as a schedule is) driven one page at a time by a message on the decision queue
(`{"kind": "batch_page", "batch_id", "page"}`). Each page follows the schedule's three steps:

1. claim: the page's execution ids (`pending`) and the cursor after them are written;
2. act: each pending execution gets the action, with the request id `batch:<batch id>`, so the
   same action sent again to one execution is one action (the decider records each message id
   once; a signal id, a redrive request id and a fork id are idempotent the same way);
3. the next page's message is sent, then the record advances (page + 1, counts, `pending` empty).

A crash anywhere leaves the page's message on the queue: its redelivery finds `pending` and acts
on it again (one action each, by the request id), or finds the record advanced and is dropped.
A message for a page the record has passed is a duplicate and is dropped. `stop` marks the
record STOPPED; the next message finds it so and does nothing (the page being acted on, at most
PAGE executions, finishes). Only executions started before the batch was created are acted on.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from orbit.core.history.messages import BatchPage
from orbit.core.search import Cond, Filter, parse, plan
from orbit.errors import (
    ConflictError,
    ExecutionEnded,
    ExecutionExists,
    NotFound,
    NotParked,
    OrbitError,
    PauseRefused,
    RedriveRefused,
    ValidationError,
)

log = logging.getLogger("orbit.batches")
KIND = BatchPage.KIND
PAGE = 100  # executions acted on per message
ACTIONS = ("cancel", "signal", "pause", "unpause", "redrive", "fork")
MAX_ERRORS = 20  # the last errors kept in the record
MAX_RETRIES = 8
KEEP_S = 30 * 86400  # an ended batch's record expires after 30 days
BATCH_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,79}")
SKIPPED = (ExecutionEnded, NotFound, NotParked, PauseRefused, RedriveRefused)


def is_batch_message(body: dict[str, Any]) -> bool:
    return body.get("kind") == KIND


def check_action(action: Any, args: dict[str, Any]) -> dict[str, Any]:
    """The action's arguments as stored; ValidationError naming the one that does not fit."""
    if action == "reset":
        raise ValidationError("Orbit has no reset (a redrive from a chosen step): `redrive` continues a "
                              "failed execution where it stopped, `fork --from-step STEP` starts a new "
                              "execution from a step", "action")
    if action not in ACTIONS:
        raise ValidationError(f"unknown action {action!r}; one of {', '.join(ACTIONS)}", "action")
    reason = args.get("reason") or ""
    if not isinstance(reason, str) or len(reason) > 1000:
        raise ValidationError("must be a string of at most 1000 characters", "reason")
    out: dict[str, Any] = {"reason": reason}
    if action == "signal":
        name = args.get("signal")
        if not isinstance(name, str) or not name or len(name) > 200:
            raise ValidationError("a signal action needs the signal's name", "signal")
        out["signal"], out["payload"] = name, args.get("payload")
    if action == "fork":
        step = args.get("from_step")
        if not isinstance(step, str) or not step or len(step) > 200:
            raise ValidationError("a fork action needs the step to run again from", "from_step")
        out["from_step"] = step
    if action == "cancel":
        out["force"] = bool(args.get("force", False))
    return out


class BatchService:
    def __init__(self, store: Any, engine: Any) -> None:
        self.store, self.engine = store, engine

    @property
    def now_ms(self) -> int:
        return int(self.engine.clock.now_ms())

    # ------------------------------------------------------------ operations
    def create(self, action: str, where: str, args: dict[str, Any] | None = None,
               batch_id: str | None = None) -> dict[str, Any]:
        """Record the batch and send its first page's message; the same id with the same action,
        filter and arguments again answers with the batch (a retried request), another is refused."""
        stored = check_action(action, args or {})
        flt = parse(where)
        plan(flt)  # refused here, before anything is recorded, if it would read the whole table
        if batch_id is None:
            batch_id = self.engine.ids.token()[:16]
        if not isinstance(batch_id, str) or not BATCH_ID.fullmatch(batch_id):
            raise ValidationError("must be 1-80 letters, digits, '_', '.' or '-', starting with a letter or "
                                  "digit", "id")
        hit = self.store.get(batch_id)
        if hit is not None:
            old = hit[0]
            if (old["action"], old["where"], old["args"]) == (action, where, stored):
                if old["status"] == "RUNNING":  # a retried request: its first send may have been lost
                    self._send(batch_id, old["page"])  # a duplicate page message is dropped
                return describe(old)
            raise ExecutionExists(batch_id, f"batch {batch_id!r} already exists with another action or "
                                            "filter")
        now = self.now_ms
        record = {"id": batch_id, "action": action, "where": where, "args": stored, "status": "RUNNING",
                  "created_at_ms": now, "updated_at_ms": now, "page": 0, "cursor": None, "pending": None,
                  "next_cursor": None, "seen": 0, "acted": 0, "skipped": 0, "failed": 0, "errors": []}
        try:
            self.store.put(batch_id, record, None)
        except ConflictError:
            return self.create(action, where, args, batch_id)  # created meanwhile: compare with it
        self._send(batch_id, 0)
        return describe(record)

    def describe(self, batch_id: str) -> dict[str, Any]:
        return describe(self._load(batch_id)[0])

    def stop(self, batch_id: str) -> dict[str, Any]:
        """Stop a running batch: no further page is acted on (the one in progress finishes)."""
        for _ in range(MAX_RETRIES):
            b, rev = self._load(batch_id)
            if b["status"] != "RUNNING":
                return describe(b)
            now = self.now_ms
            b = {**b, "status": "STOPPED", "updated_at_ms": now, "ended_at_ms": now,
                 "expires_at_s": now // 1000 + KEEP_S}
            try:
                self.store.put(batch_id, b, rev)
            except ConflictError:
                continue
            return describe(b)
        raise ConflictError(f"batch:{batch_id}", -1,
                            f"batch {batch_id!r}: gave up after {MAX_RETRIES} conflicts")

    def preview(self, where: str, cap: int = 10_000) -> dict[str, Any]:
        """How many executions the filter matches now (up to `cap`), and the first few ids."""
        flt = parse(where)
        plan(flt)
        count, cursor = 0, None
        first: list[str] = []
        while count < cap:
            entries, cursor = self.engine.store.search_executions(flt, min(1000, cap - count), cursor)
            count += len(entries)
            first += [e.execution_id for e in entries][:max(0, 10 - len(first))]
            if cursor is None:
                break
        return {"count": count, "capped": cursor is not None, "cap": cap, "first": first}

    # ------------------------------------------------------------ the page driver (decision queue)
    def handle(self, body: dict[str, Any]) -> None:
        try:
            msg = BatchPage.from_dict(body)
        except ValidationError as e:
            log.warning("batch message dropped: %s", e)
            return
        batch_id, page = msg.batch_id, msg.page
        hit = self.store.get(batch_id)
        if hit is None:
            return
        b, rev = hit
        if b["status"] != "RUNNING" or page < b["page"]:
            return  # stopped, ended, or a duplicate of a page already done
        if b["pending"] is None:  # 1. claim
            entries, nxt = self.engine.store.search_executions(self._filter(b), PAGE, b["cursor"])
            claimed = {**b, "pending": [e.execution_id for e in entries], "next_cursor": nxt}
            try:
                rev = self.store.put(batch_id, claimed, rev)
            except ConflictError:
                raise ConflictError(f"batch:{batch_id}", rev, f"batch {batch_id!r} changed meanwhile; "
                                    "the message is retried") from None
            b = claimed
        outcomes = [self._act(b, eid) for eid in b["pending"]]  # 2. act
        more = b["next_cursor"] is not None
        if more:  # 3. the next page's message, then advance
            self._send(batch_id, b["page"] + 1)
        flush = getattr(self.engine.queues, "flush", None)
        if flush is not None:  # the decider holds its sends to the handler's end: these leave first
            flush()
        self._advance(batch_id, b["page"], outcomes, more)

    def _act(self, b: dict[str, Any], eid: str) -> tuple[str, str, str]:
        """(execution id, acted | skipped | failed, why)."""
        a, args, rid = b["action"], b["args"], f"batch:{b['id']}"
        reason = args.get("reason") or f"batch {b['id']}"
        try:
            if a == "cancel":
                self.engine.cancel(eid, reason, args.get("force", False), request_id=rid)
            elif a == "signal":
                self.engine.signal(eid, args["signal"], args.get("payload"), signal_id=rid)
            elif a == "pause":
                self.engine.pause(eid, reason, request_id=rid)
            elif a == "unpause":
                self.engine.unpause(eid, reason, request_id=rid)
            elif a == "redrive":
                self.engine.redrive(eid, request_id=rid)
            elif a == "fork":
                self.engine.fork(eid, args["from_step"], f"{eid}-{rid.replace(':', '-')}"[:200])
        except SKIPPED as e:
            return eid, "skipped", str(e)
        except OrbitError as e:
            return eid, "failed", str(e)
        return eid, "acted", ""

    def _advance(self, batch_id: str, page: int, outcomes: list[tuple[str, str, str]], more: bool) -> None:
        for _ in range(MAX_RETRIES):
            b, rev = self._load(batch_id)
            if b["page"] != page or b["pending"] is None:
                return  # another delivery of this page advanced it
            now = self.now_ms
            errors = (b["errors"] + [{"execution_id": e, "error": why[:300]}
                                     for e, kind, why in outcomes if kind == "failed"])[-MAX_ERRORS:]
            new = {**b, "page": page + 1, "cursor": b["next_cursor"], "pending": None, "next_cursor": None,
                   "seen": b["seen"] + len(outcomes), "errors": errors, "updated_at_ms": now}
            for kind in ("acted", "skipped", "failed"):
                new[kind] = b[kind] + sum(1 for o in outcomes if o[1] == kind)
            if not more and new["status"] == "RUNNING":
                new["status"], new["ended_at_ms"] = "COMPLETED", now
            if new["status"] != "RUNNING":
                new["expires_at_s"] = now // 1000 + KEEP_S
            try:
                self.store.put(batch_id, new, rev)
            except ConflictError:
                continue  # stopped meanwhile: count this page into the stopped record
            return
        raise ConflictError(f"batch:{batch_id}", -1,
                            f"batch {batch_id!r}: gave up after {MAX_RETRIES} conflicts")

    def _filter(self, b: dict[str, Any]) -> Filter:
        """The batch's filter, and only executions started before the batch was created."""
        before = Cond("started", "<", (int(b["created_at_ms"]),), "", f"started < {b['created_at_ms']}")
        return Filter(parse(b["where"]).conds + (before,))

    def _send(self, batch_id: str, page: int) -> None:
        self.engine.queues.send_decision(BatchPage.of(batch_id, page).to_dict())

    def _load(self, batch_id: str) -> tuple[dict[str, Any], int]:
        if not isinstance(batch_id, str) or not BATCH_ID.fullmatch(batch_id):
            raise NotFound(f"batch {batch_id!r} not found")
        hit = self.store.get(batch_id)
        if hit is None:
            raise NotFound(f"batch {batch_id!r} not found")
        return hit


def describe(b: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "action", "where", "args", "status", "created_at_ms", "updated_at_ms", "ended_at_ms",
            "seen", "acted", "skipped", "failed", "errors")
    out = {k: b.get(k) for k in keys}
    out["pages"] = b.get("page", 0)
    out["in_progress"] = len(b.get("pending") or [])
    return out
