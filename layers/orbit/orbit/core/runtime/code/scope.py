"""`with ctx.scope() as s:` cancellation scopes, and shielded scopes for clean-up.

A scope takes one position in the code that opens it and records a unit, `<position>.scope()`
(`<position>.shield()` when shielded); the calls made inside it, by the code itself or by
branches started inside it, are keyed under it (`<position>.scope()/0/1.payments.charge`).

- `s.cancel(reason)` stops every unit of the scope still live (recorded as StepCancelled; a
  running step's worker is told through its heartbeat, a child is cancelled); the pending
  call raises `orbit.Cancelled`, and so does any new call in the scope. The scope swallows
  what its cancellation raised, so the code goes on after the `with` block.
- `ctx.scope(shield=True)`: a cancel (or timeout) of the workflow leaves the scope's units
  running, and calls inside it do not raise; the workflow sees its `Cancelled` when the
  scope ends. A forced cancel still stops everything.
A cancelled scope's unit ends CANCELLED (the cancel stops it too, so a replay knows the scope was
cancelled even where it no longer runs the call that cancelled it); otherwise its result is
`{"cancelled": false}`.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from orbit.core.history.state import CANCELLED, PENDING
from orbit.core.runtime import commands as C
from orbit.core.runtime.code.branches import current
from orbit.core.runtime.code.compare import describe_call
from orbit.core.runtime.code.errors import Cancelled
from orbit.core.runtime.code.keys import group_key
from orbit.core.runtime.code.replay import Replay
from orbit.errors import OrbitError


class Scope:
    """A region of durable calls that can be cancelled together (see the module doc)."""

    def __init__(self, replay: Replay, shield: bool = False) -> None:
        if not isinstance(shield, bool):
            raise TypeError(f"scope(shield=...) takes True or False, got {shield!r}")
        self._replay = replay
        self.shielded = shield
        self.cancelled = False
        self.reason = ""
        self.key = ""
        self._saved: tuple[Any, ...] = ()

    def __enter__(self) -> Scope:
        r = self._replay
        position = r.next_position()
        group = "shield" if self.shielded else "scope"
        self.key = group_key(r.prefix, position, group)
        requested = describe_call(group, self.key)
        u = r.state.units.get(self.key)
        if u is None:
            r._check_absent(position, requested)
        else:
            r._check_present(position, self.key, u, requested)
        if u is not None and u.status == CANCELLED and not self.shielded:
            self.cancelled, self.reason = True, f"scope {self.key} cancelled"  # recorded: see cancel()
        if u is None or u.status == PENDING:
            if not self.shielded:
                r._maybe_deliver_cancel()
            r._emit_units(position, [self.key])
            r.outbox.append(C.FanOut(self.key, ["0"]))
        self._saved = (r.prefix, r.position, r.scopes, r.cancel_delivered)
        r.prefix, r.position, r.scopes = f"{self.key}/0/", 0, (*r.scopes, self)
        return self

    def cancel(self, reason: str = "") -> None:
        """Stop what runs in the scope; calls in it raise `orbit.Cancelled` from now on."""
        if self.cancelled:
            return
        if not self.key:
            raise RuntimeError("a scope can only be cancelled inside its `with` block")
        self.cancelled, self.reason = True, str(reason or f"scope {self.key} cancelled")
        r = current(self._replay)
        prefix = self.key + "/"
        units = r.state.units
        live = [k for k in dict.fromkeys([*r.state.active, *r.emitted_units, self.key])
                if (k.startswith(prefix) or k == self.key) and (k not in units or not units[k].terminal)]
        if live:
            r._wait([C.CancelUnit(k, self.reason) for k in live])

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        r = self._replay
        prefix, position, scopes, delivered = self._saved
        r.prefix, r.position, r.scopes = prefix, position, scopes
        aborting = r.abort_kind() in ("cancelled", "timed_out")
        if not aborting:
            r.cancel_delivered = delivered  # a scope's cancel is not the workflow's
        u = r.state.units.get(self.key)
        if u is None or not u.terminal:
            r.outbox.append(C.RecordResult(self.key, {"cancelled": self.cancelled}))
        if exc is not None:
            return self.cancelled and isinstance(exc, (Cancelled, OrbitError)) and not aborting
        if self.shielded:
            r._maybe_deliver_cancel()  # the workflow's cancel waited for the shield to end
        return False


