"""How often a task's `ctx.heartbeat(details)` becomes a heartbeat message.

Every heartbeat message is a decider commit, so calls are throttled. Two modes:
- no heartbeat timeout on the step: at most one message per `heartbeat_interval_s`,
  calls in between are dropped (they only extend the lease; nothing waits for them);
- a `heartbeat_timeout`: at most one message per timeout / 3, and a call that falls
  inside the window is not dropped: its details (the latest ones) leave in a trailing
  send when the window ends, so the engine sees the last progress, and a task that
  heartbeats once just after a send still counts as alive before the timeout. Three
  sends per timeout leave room for a delayed message or two.
The engine never heartbeats on the task's behalf: a background heartbeat would
prove only that the process lives, not that the task makes progress, and would
cost a commit per period for every running task.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("orbit.worker")
_NOTHING = object()


class HeartbeatThrottle:
    """`beat(details) -> cancelled?`; `send(details) -> cancelled?` does the actual message."""

    def __init__(self, interval_s: float, send: Callable[[Any], bool], trailing: bool,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = interval_s
        self._send = send
        self._trailing = trailing
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._last: float | None = None  # when the last message left
        self._pending: Any = _NOTHING  # details waiting for the trailing send
        self._timer: threading.Timer | None = None
        self._closed = False
        self._cancelled = False

    @classmethod
    def for_dispatch(cls, heartbeat_timeout_ms: int | None, interval_s: float,
                     send: Callable[[Any], bool]) -> HeartbeatThrottle:
        if heartbeat_timeout_ms is None:
            return cls(interval_s, send, trailing=False)
        return cls(heartbeat_timeout_ms / 3000, send, trailing=True)

    def beat(self, details: Any) -> bool:
        with self._lock:
            if self._closed:
                return self._cancelled
            now = self._monotonic()
            if self._last is None or now - self._last >= self.interval_s:
                self._pending = _NOTHING  # these details supersede any held ones
                self._emit(details, now)
            elif self._trailing:
                self._pending = details
                if self._timer is None:
                    self._timer = threading.Timer(self.interval_s - (now - self._last), self._flush)
                    self._timer.daemon = True
                    self._timer.start()
            return self._cancelled

    def close(self) -> None:
        """The task ended: its result supersedes any held details, so nothing more is sent."""
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _flush(self) -> None:
        with self._lock:
            self._timer = None
            if self._closed or self._pending is _NOTHING:
                return
            details, self._pending = self._pending, _NOTHING
            try:
                self._emit(details, self._monotonic())
            except Exception:  # the timer thread has no caller: the next call or the timeout will tell
                log.warning("could not send a trailing heartbeat", exc_info=True)

    def _emit(self, details: Any, now: float) -> None:
        # Under the lock, so messages leave in call order and `_last` matches what was sent.
        self._last = now
        if self._send(details):
            self._cancelled = True
