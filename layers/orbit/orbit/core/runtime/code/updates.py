"""Updates in code workflows: `ctx.update_handler(name, fn, validator=None)` (docs/updates.md).

The deterministic point. An accepted update runs when the replay *blocks*: the workflow waits
on a durable call at position p whose result is not recorded (a step, sleep, wait_for, child,
parallel or map). The handler runs there, on the workflow's thread, so it reads and changes the
function's local variables; the runtime returns `CompleteUpdate(update_id, p, result|error)`,
recorded as `UpdateCompleted`. On every later replay, warm or cold, the updates recorded at
position <= p run again just before call p returns (or when the replay blocks at p), in the
order they first ran, so the locals they changed come out the same. Their results are
not recorded twice.

A handler (and a validator) may not make a durable call: it would move the positions the
replay resolves. Such a call fails the update with an error that names the call; an exception
the handler raises fails the update (`UPDATE_FAILED`), the execution goes on. The validator
runs twice: at the API on a side replay (a refusal records nothing) and again here, against
the state the handler will see (a refusal then completes the update with `UPDATE_REFUSED`).
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable
from typing import Any

from orbit.core.history.events import TaskError
from orbit.core.history.evolve.updates import completed_updates, pending_updates
from orbit.core.runtime import commands as C
from orbit.core.runtime.code.specs import as_json

_CONTEXT_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "context.py")
UPDATE_FAILED = "UPDATE_FAILED"
UPDATE_REFUSED = "UPDATE_REFUSED"


class DurableCallRefused(Exception):
    """A query or update handler (or a validator) called a durable operation."""


class Refused(Exception):
    """The validator refused the update; the message is the validator's, word for word."""


def ctx_call(default: str) -> str:
    """The `ctx` method a handler called: the outermost frame inside the context module."""
    frame, name, found = sys._getframe(2), default, False
    while frame is not None:  # an update handler runs inside the workflow's own pending ctx call
        if frame.f_code.co_filename == _CONTEXT_FILE:
            name, found = frame.f_code.co_name, True
        elif found:
            break
        frame = frame.f_back  # type: ignore[assignment]
    return name


class _NoDurableCalls:
    """Stands in for the replay while a handler runs: any durable call is refused, by name."""

    def __init__(self, execution_id: str, what: str) -> None:
        self.execution_id = execution_id
        self._what = what

    def __getattr__(self, attr: str) -> Any:
        raise DurableCallRefused(f"{self._what} called ctx.{ctx_call(attr)}(): it may not call a durable "
                                 "operation")


def guarded(ctx: Any, what: str, fn: Callable[[], Any]) -> Any:
    """Call `fn()` with every durable call on `ctx` refused (`DurableCallRefused`)."""
    replay, ctx._replay = ctx._replay, _NoDurableCalls(ctx.execution_id, what)
    try:
        return fn()
    finally:
        ctx._replay = replay


def validate(ctx: Any, validator: Callable[[Any], Any] | None, name: str, input: Any) -> None:
    """Run a validator: an exception (or a False return) refuses the update (`Refused`)."""
    if validator is None:
        return
    try:
        ok = guarded(ctx, f"the validator of update {name!r}", lambda: validator(input))
    except Exception as e:  # noqa: BLE001 - user code: any exception is a refusal
        raise Refused(str(e) or type(e).__name__) from None
    if ok is False:
        raise Refused(f"update {name!r} was refused by its validator")


class Updates:
    """One replay's update handlers and the updates it has applied."""

    def __init__(self) -> None:
        self.handlers: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any] | None]] = {}
        self.ctx: Any = None
        self.applied: set[str] = set()  # ids whose handler ran in this replay
        self.emitted: list[str] = []  # ids this feed completed (the cache checks they were recorded)
        self.dry = False  # a side replay (query, validator): apply recorded updates, run no new one

    def register(self, ctx: Any, name: str, fn: Any, validator: Any) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"an update name is a non-empty string, not {name!r}")
        if not callable(fn):
            raise TypeError(f"update {name!r}: the handler must be callable, not {fn!r}")
        if validator is not None and not callable(validator):
            raise TypeError(f"update {name!r}: the validator must be callable or None, not {validator!r}")
        self.ctx = ctx
        self.handlers[name] = (fn, validator)

    def before_return(self, replay: Any) -> None:
        """Run again, in order, the recorded updates that ran at or before the current position."""
        if not replay.state.updates:
            return
        for uid, rec in completed_updates(replay.state):
            if uid in self.applied or rec.get("step") or int(rec.get("position") or 0) > replay.position:
                continue
            self.applied.add(uid)
            handler = self.handlers.get(str(rec.get("name")))
            if handler is None or (rec.get("error") or {}).get("code") == UPDATE_REFUSED:
                continue  # refused when it was to run: the handler never ran
            try:  # what it changed, it changes again (also when it raised after changing it)
                self._call(handler[0], str(rec.get("name")), rec.get("input"))
            except Exception:  # noqa: BLE001 - the recorded outcome stands
                pass

    def at_block(self, replay: Any) -> list[C.Command]:
        """The replay blocks at its current position: catch up, then run accepted updates."""
        if not replay.state.updates:
            return []
        self.before_return(replay)
        if self.dry:
            return []
        out: list[C.Command] = []
        for uid, rec in pending_updates(replay.state):
            name = str(rec.get("name"))
            if uid in self.applied or name not in self.handlers:
                continue  # a handler registered later runs at a later block
            self.applied.add(uid)
            self.emitted.append(uid)
            fn, validator = self.handlers[name]
            result, error = None, None
            try:
                validate(self.ctx, validator, name, rec.get("input"))
                result = as_json(self._call(fn, name, rec.get("input")), f"the result of update {name!r}",
                                 "result")
            except Refused as e:
                error = TaskError(UPDATE_REFUSED, str(e), retryable=False)
            except TaskError as e:
                error = e
            except Exception as e:  # noqa: BLE001 - the handler is user code; the execution goes on
                error = TaskError(UPDATE_FAILED, f"update {name!r} failed: {type(e).__name__}: {e}", False)
            out.append(C.CompleteUpdate(uid, replay.position, result, error))
        return out

    def _call(self, fn: Callable[[Any], Any], name: str, input: Any) -> Any:
        return guarded(self.ctx, f"update handler {name!r}", lambda: fn(copy.deepcopy(input)))

    def recorded(self, state: Any) -> bool:
        """Is every update this replay completed in its last feed recorded in `state`?"""
        return all((state.updates.get(uid) or {}).get("status") == "COMPLETED" for uid in self.emitted)
