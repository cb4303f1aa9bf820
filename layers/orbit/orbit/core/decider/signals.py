"""Signals and hooks: buffered until a unit waits for them, delivered once."""

from __future__ import annotations

from orbit.core.decider import updates
from orbit.core.decider.context import Ctx
from orbit.core.history.events import SignalConsumed, StepSucceeded


def deliver(ctx: Ctx, name: str) -> None:
    """If a unit waits for `name` and a payload is buffered, hand the oldest one over."""
    s = ctx.state
    unit = s.waiters.get(name)
    buffered = s.signals.get(name)
    if unit is None or not buffered:
        return
    first = buffered[0]
    u = s.units[unit]
    ctx.emit(SignalConsumed(unit, name, str(first["signal_id"])))
    ctx.emit(StepSucceeded(unit, max(1, u.attempt), first["payload"]))
    updates.consumed(ctx, unit, str(first["signal_id"]))  # an update delivered as this signal
