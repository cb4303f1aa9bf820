"""The working context of one decision: state, time, ids, and what was decided so far."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol

from orbit.core.history.effects import Effect
from orbit.core.history.events import Event, Recorded
from orbit.core.history.model import apply
from orbit.core.history.state import ExecutionState


class IdSource(Protocol):
    """Where a decision gets new tokens (a port the service passes in: random on AWS, counted in tests)."""

    def token(self) -> str:
        """An unguessable token of at least 128 bits."""
        ...


@dataclass
class Decision:
    """What one decision produced: events to commit (with seq) and effects to run after the commit."""

    events: list[Recorded] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)


class Ctx:
    """Emits events *and applies them at once*, so every later rule sees the new state."""

    def __init__(self, workflow: Any, state: ExecutionState, now_ms: int, ids: IdSource) -> None:
        self.workflow = workflow
        self.state = state
        self.now = now_ms
        self.ids = ids
        self.decision = Decision()
        self._meter: Any = None

    def keys(self) -> bytes | None:
        """The stack key for hook tokens (read only when a hook needs it): `hook_tokens.KeySource`."""
        get = getattr(self.ids, "hook_key", None)
        return get() if callable(get) else None

    @property
    def meter(self) -> Any:
        """The decision's expression meter (`expressions.Meter`): the steps spent, the runners."""
        if self._meter is None:
            from orbit.core.definition.expressions import Meter

            self._meter = Meter()
        return self._meter

    def emit(self, event: Event) -> None:
        r = Recorded(self.state.last_seq + 1, self.now, event)
        apply(self.state, r)
        self.decision.events.append(r)

    def effect(self, effect: Effect) -> None:
        self.decision.effects.append(effect)

    @property
    def event_count(self) -> int:
        return len(self.decision.events)

    def token(self) -> str:
        return self.ids.token()

    def idempotency_key(self, unit: str) -> str:
        # Stable across retries and redeliveries of the unit: workers dedupe on it.
        return f"{self.state.id}:{unit}"


def jitter_fraction(execution_id: str, unit: str, attempt: int) -> float:
    """A deterministic draw in [0, 1): the same arguments give the same jitter on every replay."""
    digest = hashlib.sha256(f"{execution_id}\x00{unit}\x00{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64
