"""`TaskContext`: what a task function gets besides its input (`fn(input, ctx)`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TaskContext:
    execution_id: str
    step: str
    attempt: int
    idempotency_key: str
    token: str
    deadline_ms: int | None = None
    _beat: Callable[[Any], bool] | None = field(default=None, repr=False)
    _cancelled: bool = field(default=False, repr=False)
    # The step's heartbeat_timeout: call `heartbeat` more often than this, or the attempt fails
    # with HEARTBEAT_TIMEOUT. Nothing heartbeats for the task on its own.
    heartbeat_timeout_ms: int | None = None
    # True when the engine sent this attempt again (its first delivery may have run already).
    redelivery: bool = False

    def heartbeat(self, details: Any = None) -> None:
        """Tell the engine the task is alive (a StepHeartbeat) and learn whether it was cancelled.

        Throttled (orbit/worker_heartbeat.py): call it as often as convenient."""
        if self._beat is not None and self._beat(details):
            self._cancelled = True

    @property
    def cancelled(self) -> bool:
        """True once the engine withdrew this attempt (seen at the latest heartbeat); stop early."""
        return self._cancelled
