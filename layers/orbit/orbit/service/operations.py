"""The read and control operations of the engine: describe, history, list, signal, hooks, cancel.

Signals and hook payloads are checked against the signal's schema *before*
anything is recorded (PayloadRefused); accepted ones go through the decision
queue like every other inbound message.
"""

from __future__ import annotations

import hashlib
from typing import Any

from orbit.core.definition.model import Definition
from orbit.core.history.hook_tokens import DIGEST_PREFIX, key_of, matches, sha256_hex, token_of
from orbit.core.history.messages import (
    CancelMessage,
    HookMessage,
    PauseMessage,
    SignalMessage,
    UnparkMessage,
    UnpauseMessage,
)
from orbit.core.history.state import TERMINAL_WORKFLOW, ExecutionState
from orbit.core.history.storable import signal_id_problem, value_problem
from orbit.errors import (
    ExecutionEnded,
    ExecutionExpired,
    HookAlreadyResumed,
    IdReused,
    NotFound,
    NotParked,
    PauseRefused,
    PayloadRefused,
    ValidationError,
)
from orbit.service.archive import read_archived
from orbit.service.catalog import CatalogApi, signal_schema
from orbit.service.ports import Clock, HistoryStore, IdSource, IndexEntry, Queues, Registry

# Pages of the HTTP API (docs/limits.md): a read never returns more than the maximum, and a caller
# who names no limit gets the default, so one request stays small after a 200,000-element fan-out.
HISTORY_PAGE, MAX_HISTORY_PAGE = 1000, 10_000
MAX_PAUSE_REASON = 1000  # characters of an `orbit pause` / `unpause` reason
STEPS_PAGE, MAX_STEPS_PAGE = 1000, 10_000


class EngineApi(CatalogApi):
    store: HistoryStore
    queues: Queues
    registry: Registry
    clock: Clock
    ids: IdSource

    def load_state(self, execution_id: str) -> ExecutionState:
        """The current state, read from the store (NotFound when there is no such execution).

        A child cancelled before its start arrived has a history (the tombstone) but is not an
        execution yet: NotFound as well.
        """
        state = self._cached_state(execution_id)
        if state is None:
            loaded = self.store.load(execution_id)
            self._check_retained(execution_id, loaded.expires_at_s)
            state = loaded.fold()
        if not state.created:
            raise NotFound(f"execution {execution_id!r} not found (only its parent's cancel is recorded)")
        return state

    def _check_retained(self, execution_id: str, expires_at_s: int | None) -> None:
        """DynamoDB deletes expired items up to days late: past its expiry an execution is gone."""
        if expires_at_s is not None and expires_at_s * 1000 <= self.clock.now_ms():
            raise ExecutionExpired(execution_id, expires_at_s)

    def cached_state(self, execution_id: str) -> ExecutionState | None:
        """The state this process holds for the execution, or None (`Engine` keeps a cache)."""
        return None

    def _cached_state(self, execution_id: str) -> ExecutionState | None:
        """The state this process's decider holds for the execution, if nothing was committed
        since (one short history read says so): folding a 200,000-unit state from the store
        takes seconds, and `orbit dev` / `orbit run` read the executions they decide."""
        cached = self.cached_state(execution_id)
        if cached is None:
            return None
        page = self.store.history(execution_id, cached.last_seq, 1)
        if page.records:
            return None
        self._check_retained(execution_id, page.expires_at_s)
        return cached

    def describe(
        self, execution_id: str, steps_after: str | None = None, steps_limit: int | None = None
    ) -> dict[str, Any]:
        """The describe shape; with `steps_limit`, `steps` holds at most that many units (after
        the unit `steps_after`, in the order they were created) and `steps_next` names the unit
        to pass as `steps_after` for the next page (None on the last page)."""
        try:
            state = self.load_state(execution_id)
        except NotFound as gone:  # expired (or deleted by TTL): the archive's copy, if there is one
            state = read_archived(getattr(self, "archive", None), execution_id, gone).state()
        if steps_limit is None:
            return state.describe()
        page, after = page_units(state.units, steps_after, steps_limit)
        desc = state.describe(page)
        desc["steps_next"] = after
        return desc

    def history(
        self, execution_id: str, after_seq: int = 0, limit: int | None = None, values: bool = True
    ) -> list[dict[str, Any]]:
        """`{seq, timestamp_ms, type, ...fields}` in commit order (all of it unless `limit`).

        Hook tokens are credentials: events show `token_sha256` instead (see `shown`).
        `values=False`: large values kept in the payload store (S3) are not read; each is null
        and the event lists its path in `stored_values` (read it with `event`)."""
        return [shown(e) for e in self.recorded_history(execution_id, after_seq, limit, values)]

    def event(self, execution_id: str, seq: int) -> dict[str, Any]:
        """One event of the history, with its large values read back (NotFound if none has `seq`)."""
        found = self.history(execution_id, seq - 1, 1) if seq > 0 else []
        if not found or found[0]["seq"] != seq:
            raise NotFound(f"execution {execution_id!r} has no event {seq}")
        return found[0]

    def recorded_history(
        self, execution_id: str, after_seq: int = 0, limit: int | None = None, values: bool = True
    ) -> list[dict[str, Any]]:
        """The events exactly as stored, hook tokens included: for in-process tools (the simulator,
        golden histories), never served by the API or printed by the CLI."""
        out: list[dict[str, Any]] = []
        cursor: int | None = after_seq
        lazy = {} if values else {"values": False}  # stores that predate `values` take no keyword
        try:
            while cursor is not None and (limit is None or len(out) < limit):
                page = self.store.history(
                    execution_id, cursor, 1000 if limit is None else min(1000, limit - len(out)), **lazy
                )
                self._check_retained(execution_id, page.expires_at_s)
                for r in page.records:
                    d = r.to_dict()
                    if r.seq in page.stored:
                        d["stored_values"] = page.stored[r.seq]
                    out.append(d)
                cursor = page.next_after_seq
        except NotFound as gone:  # expired (or deleted by TTL): the archive's copy, if there is one
            archived = read_archived(getattr(self, "archive", None), execution_id, gone)
            kept = [r.to_dict() for r in archived.records if r.seq > after_seq]  # values inline
            return kept if limit is None else kept[:limit]
        return out

    def list(
        self,
        workflow: str | None = None,
        status: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        started_after_ms: int | None = None,
        started_before_ms: int | None = None,
        id_prefix: str | None = None,
        where: dict[str, Any] | str | None = None,
    ) -> tuple[list[IndexEntry], str | None]:
        if where:  # a filter (orbit/core/search.py): the separate parameters join its conditions
            from orbit.core.search import from_params

            flt = from_params(where, workflow, status, started_after_ms, started_before_ms, id_prefix)
            return self.store.search_executions(flt, limit, cursor)
        return self.store.list_executions(
            workflow, status, limit, cursor, started_after_ms=started_after_ms,
            started_before_ms=started_before_ms, id_prefix=id_prefix or None,
        )

    def signal(self, execution_id: str, name: str, payload: Any = None, signal_id: str | None = None) -> str:
        """Queue a signal; nothing is recorded when it is refused: PayloadRefused if the payload
        breaks the schema, ValidationError if a definition has no signal of that name."""
        if signal_id is not None:
            problem = signal_id_problem(signal_id)
            if problem:
                raise ValidationError(problem, "id")
        check_json(payload, "payload")
        check_json(name, "signal")
        state = self.load_state(execution_id)
        _check_running(state, f"signal {name!r} was not sent")
        if signal_id is not None and self._signal_seen(state, name, payload, signal_id):
            return signal_id  # the same signal again: received once, nothing new
        self._check_payload(state, name, payload)
        if signal_id is not None:  # queued but not received yet: the claim knows it (409 if it differs)
            from orbit.service.request_claims import claim

            claim(self, state, "signal", signal_id, name, payload)
        # The caller's id lives in its own namespace: whatever it is, it can never equal the id of
        # a start, hook resume, task result, child completion or timer message (deduplicated alike).
        sid = signal_id or self.ids.token()
        self.queues.send_decision(
            SignalMessage(execution_id, f"signal:{sid}", name, payload).to_dict()
        )
        return sid

    def _signal_seen(self, state: ExecutionState, name: str, payload: Any, signal_id: str) -> bool:
        """Whether the execution has received the signal of this id (IdReused when that one
        had another name or payload). A signal still queued is not known here: its claim is
        (service/request_claims.py)."""
        mid = f"signal:{signal_id}"
        first = state.inbound.get(mid)
        if first is None:
            return False
        for event in self.history(state.id, max(first - 1, 0), 100, True):
            if event.get("type") == "SignalReceived" and event.get("signal_id") == mid:
                if event.get("name") != name or event.get("payload") != payload:
                    raise IdReused("signal", signal_id, str(event.get("name")), name)
                return True
        return False

    def resume_hook(self, token: str, payload: Any = None) -> str:
        """Resume a hook once by its token; returns the execution id. Only the token's hash is
        looked up, checked and sent on: the token is a credential (hook_tokens)."""
        check_json(payload, "payload")
        check_json(token, "token")
        digest = sha256_hex(token)
        ref = DIGEST_PREFIX + digest
        found = self.store.find_hook(ref)
        if found is None:
            raise NotFound("unknown hook token")
        execution_id, name = found
        state = self.load_state(execution_id)
        hook = state.hooks.get(name)
        if hook is None or not matches(hook, token, digest):
            raise NotFound("unknown hook token")
        if hook.get("disposed"):
            raise NotFound(f"hook {name!r} of execution {execution_id!r} was disposed")
        if hook.get("resumed"):
            claim = getattr(self.store, "claim_hook", None)
            if claim is not None and claim(ref, payload):
                return execution_id  # the same payload again after it was consumed: accepted, no effect
            raise HookAlreadyResumed(f"hook {name!r} of execution {execution_id!r} was already resumed")
        _check_running(state, f"hook {name!r} was not resumed")
        self._check_payload(state, name, payload)
        claim = getattr(self.store, "claim_hook", None)  # atomic resume-once where the store offers it
        if claim is not None and not claim(ref, payload):
            raise HookAlreadyResumed(f"hook {name!r} of execution {execution_id!r} was already resumed")
        self.queues.send_decision(
            HookMessage(execution_id, f"hook:{ref}", payload=payload, token_sha256=digest).to_dict()
        )
        return execution_id

    def hook_token(self, execution_id: str, name: str) -> str:
        """The token of hook `name`, derived with the stack key: for in-process tools and tests
        (the simulator, LocalStack), never served by the API or printed by the CLI."""
        hook = self.load_state(execution_id).hooks.get(name)
        if hook is None:
            raise NotFound(f"execution {execution_id!r} has no hook {name!r}")
        return token_of(execution_id, name, hook, lambda: key_of(self.ids))

    def cancel(self, execution_id: str, reason: str = "", force: bool = False,
               request_id: str | None = None) -> None:
        """`request_id` (a bulk action's `batch:<id>`): the message id, so the same request sent
        again is one cancel (the decider records each message id once)."""
        check_json(reason, "reason")
        _check_running(self.load_state(execution_id), "nothing to cancel")  # NotFound for an unknown id
        self.queues.send_decision(
            CancelMessage(execution_id, f"cancel:{_request(request_id, self.ids)}", reason or "cancelled",
                          force).to_dict()
        )

    def unpark(self, execution_id: str) -> str:
        """Try a parked execution again now, on the build the decider holds (it also un-parks by
        itself on its next decision or retry timer). Returns the message id."""
        state = self.load_state(execution_id)  # NotFound for an unknown id
        _check_running(state, "nothing to un-park")
        if state.parked is None:
            raise NotParked(execution_id, state.status)
        mid = f"unpark:{self.ids.token()}"
        self.queues.send_decision(UnparkMessage(execution_id, mid).to_dict())
        return mid

    def pause(self, execution_id: str, reason: str = "", request_id: str | None = None) -> str:
        """Hold a running execution (docs/operations.md): nothing new is dispatched and no timer
        fires until `unpause`; what arrives meanwhile is recorded. Returns the message id."""
        return self._pause_message(execution_id, "pause", reason, request_id)

    def unpause(self, execution_id: str, reason: str = "", request_id: str | None = None) -> str:
        """Let a paused execution go on: everything that came due while it was paused runs."""
        return self._pause_message(execution_id, "unpause", reason, request_id)

    def _pause_message(self, execution_id: str, kind: str, reason: str, request_id: str | None = None) -> str:
        if not isinstance(reason, str) or len(reason) > MAX_PAUSE_REASON:
            raise ValidationError(f"reason must be a string of at most {MAX_PAUSE_REASON} characters",
                                  "reason")
        check_json(reason, "reason")
        state = self.load_state(execution_id)  # NotFound for an unknown id
        _check_running(state, f"nothing to {kind}")
        if kind == "pause" and state.paused:
            raise PauseRefused(execution_id, f"is already paused (since {state.paused_at_ms} ms)")
        if kind == "unpause" and not state.paused:
            raise PauseRefused(execution_id, f"is not paused ({state.status}); there is nothing to un-pause")
        mid = f"{kind}:{_request(request_id, self.ids)}"
        message = PauseMessage if kind == "pause" else UnpauseMessage
        self.queues.send_decision(message(execution_id, mid, reason).to_dict())
        return mid

    def _check_payload(self, state: ExecutionState, name: str, payload: Any) -> None:
        try:
            wf = self.registry.get_build(state.workflow, state.version, state.build)
        except Exception:  # noqa: BLE001 - no definition at hand: nothing to check against
            return
        signals = getattr(wf, "signals", None) or {}
        if isinstance(wf, Definition):
            # a definition names every signal it can use; a misspelt one would be buffered forever
            known = set(wf.signal_names())
            if name not in known:
                raise ValidationError(
                    f"workflow {wf.name!r} v{wf.version} has no signal {name!r}; "
                    f"it knows: {', '.join(sorted(known)) or 'none'}",
                    "signal",
                )
        schema = signal_schema(signals.get(name))
        if schema is None:
            return
        from orbit.core.definition.contracts import check_schema

        err = check_schema(schema, payload, "PAYLOAD_REFUSED", label="payload",
                           schema_path=f"signals.{name}.schema")
        if err is not None:
            raise PayloadRefused(name, err.message, err.details)


def page_units(units: dict[str, Any], after: str | None, limit: int) -> tuple[list[str], str | None]:
    """One page of unit keys and the key to continue after (None when it is the last)."""
    keys = list(units)
    start = 0
    if after is not None:
        if after not in units:
            raise ValidationError(f"unknown unit {after!r} (use the steps_next of the previous page)",
                                  "query.steps_after")
        start = keys.index(after) + 1
    page = keys[start : start + limit]
    more = start + limit < len(keys)
    return page, (page[-1] if more and page else None)


def token_digest(token: str) -> str:
    """What views show of a hook token: enough to tell two apart, useless to resume one."""
    return short_digest(hashlib.sha256(token.encode()).hexdigest())


def short_digest(hex_digest: str) -> str:
    return "sha256:" + hex_digest[:16]


def shown(event: dict[str, Any]) -> dict[str, Any]:
    """An event as history readers see it: hook tokens replaced by their digest.

    A hook token resumes an execution, so it is delivered only where the definition sends it
    (`hooks.NAME.token` in a step input, `ctx.hook_token` in code) and never shown by describe,
    history, the CLI or the API. Older histories record the token; newer ones only its SHA-256,
    shown shortened the same way.
    """
    kind = event.get("type")
    if kind in ("HookCreated", "HookResumed"):
        if isinstance(event.get("token"), str):
            event = {**event, "token_sha256": token_digest(event["token"])}
            del event["token"]
        elif isinstance(event.get("token_sha256"), str):
            event = {**event, "token_sha256": short_digest(event["token_sha256"])}
    elif kind == "SignalConsumed" and str(event.get("signal_id", "")).startswith("hook:"):
        rest = event["signal_id"][5:]
        hashed = rest.startswith(DIGEST_PREFIX)
        hidden = short_digest(rest[len(DIGEST_PREFIX):]) if hashed else token_digest(rest)
        event = {**event, "signal_id": "hook:" + hidden}
    return event


def _request(request_id: str | None, ids: Any) -> str:
    if request_id is None:
        return str(ids.token())
    problem = signal_id_problem(request_id)
    if problem:
        raise ValidationError(problem, "request_id")
    return request_id


def _check_running(state: ExecutionState, action: str) -> None:
    # An ended execution ignores signals, hooks and cancels: say so instead of accepting them.
    if state.status in TERMINAL_WORKFLOW:
        nxt = state.continued_as
        later = f" (it continued as new as {nxt!r}: send it there)" if nxt else ""
        raise ExecutionEnded(state.id, state.status, action + later)


def check_json(value: Any, path: str) -> None:
    """ValidationError at `path` unless `value` is storable JSON data (it goes into history as it is):
    no lone surrogates, no NaN, at most MAX_DEPTH levels deep."""
    problem = value_problem(value, path)
    if problem:
        raise ValidationError(f"must be JSON data that can be stored: {problem}", path)
