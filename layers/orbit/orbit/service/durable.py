"""Durable functions: the Lambda durable execution API (2025-12-01) over Orbit's history store.

A *durable function* is a handler written with AWS's durable execution SDK, registered by name,
language and handler (`DurableFunction`). Each API call here loads the execution's history,
asks the pure core (`orbit.core.history.durable_ops`) what to record, and commits those events
with the store's conditional write on the next seq (a lost race reloads and decides again), so
two callers never fork a history and a repeated call changes nothing. What must happen after a
commit (invoke the handler, arm a timer, start a chained invoke's child, wake a waiting caller)
is `Followups`, carried out by the runtime (`orbit.local.durable_runtime`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from orbit.core.history import durable_ops as ops
from orbit.core.history.durable import (
    DurableState,
    apply_durable,
    callback_operation,
    next_due_ms,
    public_operation,
)
from orbit.core.history.durable_events import DurableStarted
from orbit.core.history.events import Event, Recorded
from orbit.core.history.evolve.durable import KIND
from orbit.errors import ConflictError, NotFound, OrbitError, ValidationError
from orbit.service.ports import Clock, Commit, HistoryStore, IndexEntry

NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
EXECUTION_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
LANGUAGES = ("python", "node", "lambda")  # lambda: a deployed function, invoked by name (aws/durable.py)
MAX_PAGE = 1000
CACHED_EXECUTIONS = 1000  # executions whose records are kept between calls (the oldest go first)
STATUS_TO_INDEX = {
    "RUNNING": "RUNNING",
    "SUCCEEDED": "COMPLETED",
    "FAILED": "FAILED",
    "STOPPED": "CANCELLED",
    "TIMED_OUT": "TIMED_OUT",
}


class DurableApiError(OrbitError):
    """An API call refused: `code` is the Lambda exception name, `status` its HTTP status."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.status = code, status


@dataclass(frozen=True)
class DurableFunction:
    name: str
    language: str
    handler: str  # python: "package.module.function"; node: "path/to/module.js:export"; lambda: its name
    timeout_s: int = 86_400

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ValidationError(
                f"durable function name {self.name!r} must be 1-64 of A-Z a-z 0-9 _ -", "function"
            )
        if self.language not in LANGUAGES:
            raise ValidationError(
                f"durable function {self.name!r}: language must be one of {LANGUAGES}", "language"
            )


@dataclass
class Followups:
    """What the runtime does after a commit."""

    invoke: bool = False
    due_ms: int | None = None
    children: list[dict[str, Any]] = field(default_factory=list)  # chained invokes to start
    ended: bool = False


class DurableService:
    def __init__(
        self,
        store: HistoryStore,
        clock: Clock,
        new_id: Callable[[], str],
        region: str = "us-east-1",
        account: str = "000000000000",
    ) -> None:
        self.store, self.clock, self.new_id = store, clock, new_id
        self.region, self.account = region, account
        self.functions: dict[str, DurableFunction] = {}
        self._cache: dict[str, tuple[Recorded, ...]] = {}  # execution id -> its records read so far
        self._cache_lock = threading.Lock()

    # -- functions ----------------------------------------------------------------------------

    def register(self, fn: DurableFunction) -> None:
        self.functions[fn.name] = fn

    def function(self, name: str) -> DurableFunction:
        short = function_name(name)
        fn = self.functions.get(short)
        if fn is None:
            raise DurableApiError("ResourceNotFoundException", f"Function not found: {short}", 404)
        return fn

    def function_arn(self, name: str) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account}:function:{name}"

    # -- loading and committing ---------------------------------------------------------------

    def _records(self, execution_id: str) -> list[Recorded]:
        """The execution's records: those read before (kept, they never change) and the ones the
        store has after them, so a call reads only what is new since the last call."""
        with self._cache_lock:
            out = list(self._cache.get(execution_id, ()))
        after = out[-1].seq if out else 0
        while True:
            try:
                page = self.store.history(execution_id, after_seq=after, limit=1000)
            except NotFound:
                break
            out += page.records
            if page.next_after_seq is None:
                break
            after = page.next_after_seq
        with self._cache_lock:
            if len(out) > len(self._cache.get(execution_id, ())):
                self._cache[execution_id] = tuple(out)
                while len(self._cache) > CACHED_EXECUTIONS:
                    del self._cache[next(iter(self._cache))]
        return out

    def load_id(self, eid: str) -> tuple[DurableState, int]:
        s, last = DurableState(), 0
        for r in self._records(eid):
            apply_durable(s, r)
            last = r.seq
        return s, last

    def load(self, arn: str) -> tuple[DurableState, int]:
        s, last = self.load_id(execution_id(arn))
        if not s.exists or s.arn != arn:
            raise DurableApiError("ResourceNotFoundException", f"Durable execution not found: {arn}", 404)
        return s, last

    def commit(
        self,
        arn: str,
        decide: Callable[[DurableState, int], list[Event] | ops.Refused],
    ) -> tuple[DurableState, list[Event]]:
        """Load, decide, commit on the next seq; a lost race loads and decides again."""
        for _ in range(50):
            s, last = self.load(arn)
            now = self.clock.now_ms()
            got = decide(s, now)
            if isinstance(got, ops.Refused):
                raise DurableApiError(got.code, got.message)
            if not got:
                return s, []
            try:
                self._write(execution_id(arn), last, now, got)
            except ConflictError:
                continue
            was = s.status
            for i, e in enumerate(got):
                apply_durable(s, Recorded(last + 1 + i, now, e))
            if s.status != was:  # the index row holds the status: written when it changes
                self._index(s, now)
            return s, got
        raise DurableApiError("TooManyRequestsException", f"execution {arn} is too busy", 429)

    def _write(self, eid: str, last: int, now: int, events: list[Event]) -> None:
        recs = [Recorded(last + 1 + i, now, e) for i, e in enumerate(events)]
        self.store.commit(eid, Commit(last + 1, now, None, recs))

    def _index(self, s: DurableState, now: int) -> None:
        self.store.put_index(
            IndexEntry(s.execution_id, s.function, KIND, STATUS_TO_INDEX[s.status], s.start_ms, now)
        )

    # -- the execution's lifecycle ------------------------------------------------------------

    def start(
        self,
        function: str,
        payload: str | None,
        name: str | None = None,
        parent: dict[str, str] | None = None,
        arn: str | None = None,
    ) -> DurableState:
        fn = self.function(function)
        if name is not None and not EXECUTION_ID.match(name):
            raise DurableApiError("InvalidParameterValueException", f"invalid DurableExecutionName {name!r}")
        eid = self.new_id()
        name = name or eid
        arn = arn or f"{self.function_arn(fn.name)}:$LATEST/durable-execution/{name}/{eid}"
        now = self.clock.now_ms()
        events = ops.start(arn, fn.name, name, payload, fn.timeout_s, now, parent)
        self._write(execution_id(arn), 0, now, events)
        s = DurableState()
        for i, e in enumerate(events):
            apply_durable(s, Recorded(1 + i, now, e))
        self._index(s, now)
        return s

    def begin_invocation(self, arn: str) -> tuple[DurableState, dict[str, Any]] | None:
        """Open an invocation if none is open and the execution runs: the handler's event."""
        rid = self.new_id()
        s, got = self.commit(
            arn, lambda s, now: [] if s.ended or s.invoking else ops.begin_invocation(s, rid)
        )
        if not got:
            return None
        page = [public_operation(o) for o in s.operations.values()][:MAX_PAGE]
        marker = str(MAX_PAGE) if len(s.operations) > MAX_PAGE else ""
        event = {
            "DurableExecutionArn": arn,
            "CheckpointToken": s.token,
            "InitialExecutionState": {"Operations": page, "NextMarker": marker},
        }
        return s, event

    def finish_invocation(
        self, arn: str, request_id: str, output: Any, crash: dict[str, Any] | None = None
    ) -> DurableState:
        s, _ = self.commit(arn, lambda s, now: ops.invocation_done(s, request_id, now, output, crash))
        return s

    def checkpoint(
        self, arn: str, token: str, client_token: str | None, updates: list[Any]
    ) -> tuple[DurableState, dict[str, Any]]:
        if not isinstance(updates, list) or len(updates) > 250:
            raise DurableApiError("InvalidParameterValueException", "Updates must be a list of at most 250")

        def new_callback(kind: str, op_id: str) -> str:
            # a callback id names its execution (no lookup item to write, so no crash window
            # between the commit and the item) and carries a fresh random part nobody can guess
            return f"{execution_id(arn)}.{self.new_id()}" if kind == "callback" else self._child_arn(arn)

        s, got = self.commit(
            arn, lambda s, now: ops.checkpoint(s, token, client_token, updates, now, new_callback)
        )
        if not got:  # a repeated ClientToken: the answer it had
            return s, {
                "CheckpointToken": s.client_tokens.get(client_token or "", s.token),
                "NewExecutionState": {"Operations": []},
            }
        done = next(e for e in got if type(e).__name__ == "DurableCheckpointed")
        ids = getattr(done, "operations", None) or []
        answer: dict[str, Any] = {
            "NewExecutionState": {
                "Operations": [public_operation(s.operations[i]) for i in ids if i in s.operations]
            }
        }
        if getattr(done, "token", ""):
            answer["CheckpointToken"] = done.token  # type: ignore[attr-defined]
        return s, answer

    def _child_arn(self, parent_arn: str) -> str:
        eid = self.new_id()
        return f"{parent_arn.split(':$LATEST/')[0]}:$LATEST/durable-execution/{eid}/{eid}"

    def state_page(self, arn: str, token: str, marker: str | None, max_items: int | None) -> dict[str, Any]:
        s, _ = self.load(arn)
        if s.token is None or token != s.token:
            raise DurableApiError("InvalidParameterValueException", "Invalid checkpoint token")
        start = int(marker) if marker and marker.isdigit() else 0
        n = max(1, min(int(max_items or MAX_PAGE), MAX_PAGE))
        allops = [public_operation(o) for o in s.operations.values()]
        page = allops[start : start + n]
        out: dict[str, Any] = {"Operations": page}
        if start + n < len(allops):
            out["NextMarker"] = str(start + n)
        return out

    def fire(self, arn: str) -> DurableState:
        s, _ = self.commit(arn, lambda s, now: ops.fire_due(s, now))
        return s

    def stop(self, arn: str, error: dict[str, Any] | None) -> DurableState:
        s, _ = self.commit(arn, lambda s, now: ops.stop(s, error, now))
        return s

    def callback(
        self, callback_id: str, outcome: str, result: str | None, error: dict[str, Any] | None
    ) -> DurableState:
        eid, dot, _ = callback_id.partition(".") if isinstance(callback_id, str) else ("", "", "")
        owner = self.load_id(eid)[0] if dot and EXECUTION_ID.match(eid) else None
        if owner is None or not owner.exists or callback_operation(owner, callback_id) is None:
            raise DurableApiError("ResourceNotFoundException", "Callback not found", 404)

        def decide(s: DurableState, now: int) -> list[Event] | ops.Refused:
            op = callback_operation(s, callback_id)
            if op is None:
                return ops.Refused("ResourceNotFoundException", "Callback not found")
            return ops.complete_callback(s, op, outcome, result, error, now)

        s, _ = self.commit(owner.arn, decide)
        return s

    def recover(self, arn: str) -> DurableState:
        """After a crash anywhere on the path: write the index row again (idempotent), fire what is
        due (an invocation that outlived its timeout ends, so the handler is invoked again)."""
        s, _ = self.commit(arn, lambda s, now: ops.fire_due(s, now))
        self._index(s, self.clock.now_ms())
        return s

    def child_ended(self, parent_arn: str, op_id: str, child: DurableState) -> DurableState:
        s, _ = self.commit(
            parent_arn,
            lambda s, now: ops.complete_chained(s, op_id, child.status, child.result, child.error, now),
        )
        return s

    def follow(self, s: DurableState) -> Followups:
        """What the runtime does next for the execution in state `s`."""
        f = Followups(ended=s.ended, due_ms=next_due_ms(s))
        if s.ended:
            return f
        f.invoke = not s.invoking and (s.invocations == 0 or bool(s.woken) or 0 < s.failed_invocations < 3)
        # A chained invoke's child starts once the invocation that asked for it has ended (the SDK
        # suspends on it): its result then always lands after that invocation, as on Lambda.
        for op in [] if s.invoking else s.operations.values():
            orbit = op.get("Orbit") or {}
            if op.get("Type") == "CHAINED_INVOKE" and op.get("Status") == "STARTED":
                f.children.append(
                    {
                        "op": op["Id"],
                        "function": orbit.get("Function"),
                        "arn": orbit.get("ChildArn"),
                        "input": orbit.get("Input"),
                    }
                )
        return f

    # -- reads --------------------------------------------------------------------------------

    def list_executions(self, function: str) -> list[DurableState]:
        fn = self.function(function)
        entries, cursor, out = [], None, []
        while True:
            page, cursor = self.store.list_executions(workflow=fn.name, limit=100, cursor=cursor)
            entries += page
            if cursor is None or len(entries) >= 1000:
                break
        for e in entries:
            if e.version != KIND:
                continue
            recs = self._records(e.execution_id)
            started = next((r.event for r in recs if isinstance(r.event, DurableStarted)), None)
            if started is not None:
                out.append(self.load(started.arn)[0])
        return out


def function_name(name: str) -> str:
    """The function's short name from a name, a partial or a full ARN (qualifier dropped)."""
    if name.startswith("arn:"):
        parts = name.split(":")
        name = parts[6] if len(parts) > 6 else ""
    else:
        name = name.split(":")[0]
    if not NAME.match(name):
        raise DurableApiError("InvalidParameterValueException", f"invalid function name {name!r}")
    return name


def execution_id(arn: str) -> str:
    """The Orbit execution id of a durable execution ARN: its last part."""
    eid = arn.rsplit("/", 1)[-1] if isinstance(arn, str) and "/durable-execution/" in arn else ""
    if not EXECUTION_ID.match(eid):
        raise DurableApiError(
            "ResourceNotFoundException", f"Durable execution not found: {str(arn)[:200]}", 404
        )
    return eid
