"""Timers and buffers around a running task: the keep-alive, a batch's held answers, a one-time message.

A Lambda batch holds the answers of its quick tasks and sends them in one request at its end
(`Held`). A quick task's answer is its only record (worker/dedupe.py), so holding is bounded:
- as soon as a task of the batch runs past the grace period, what is held leaves with its
  `started`, and the batch stops holding (`open`): a batch that later times out or is killed has
  already reported every task that finished;
- a task that starts while the oldest held answer is older than the grace period sends what is
  held first (`stale`), so a run of quick tasks keeps it under about twice the grace period.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from orbit.worker.timers import Handle, timers

log = logging.getLogger("orbit.worker")


class KeepAlive:
    """While a task runs, extend its message visibility and its claim every `period_s`.

    No thread of its own: the process's scheduler (worker/timers.py) runs `extend` when it is due."""

    def __init__(self, period_s: float, extend: Callable[[], None]) -> None:
        self._period_s = period_s
        self._extend = extend
        self._handle: Handle | None = None

    def __enter__(self) -> KeepAlive:
        self._handle = timers().after(self._period_s, self._extend, period_s=self._period_s)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            timers().cancel(self._handle, timeout=5)  # an extension in progress may end first


class Held:
    """Answers waiting for the end of a batch; drained by the batch's thread or a task's timer."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._items: list[dict[str, Any]] = []
        self._since: float | None = None  # when the oldest held answer was added
        self._open = False  # a task ran long: answers leave at once from now on
        self._lock = threading.Lock()
        self._monotonic = monotonic

    def add(self, messages: tuple[dict[str, Any], ...]) -> bool:
        """Hold `messages`; False when the batch no longer holds (the caller sends them now)."""
        with self._lock:
            if self._open:
                return False
            if not self._items:
                self._since = self._monotonic()
            self._items.extend(messages)
            return True

    def drain(self) -> list[dict[str, Any]]:
        with self._lock:
            items, self._items, self._since = self._items, [], None
        return items

    def open(self) -> list[dict[str, Any]]:
        """Stop holding (a task ran long); returns what was held, to be sent now."""
        with self._lock:
            self._open = True
            items, self._items, self._since = self._items, [], None
        return items

    def stale(self, max_age_s: float) -> list[dict[str, Any]]:
        """What is held, if the oldest of it waited longer than `max_age_s` (else nothing)."""
        with self._lock:
            if self._since is None or self._monotonic() - self._since <= max_age_s:
                return []
            items, self._items, self._since = self._items, [], None
        return items


class Once:
    """A message that must be sent exactly once, by whichever thread gets to it first."""

    def __init__(self, message: dict[str, Any]) -> None:
        self._message: dict[str, Any] | None = message
        self._lock = threading.Lock()

    def take(self) -> tuple[dict[str, Any], ...]:
        with self._lock:
            message, self._message = self._message, None
        return (message,) if message is not None else ()
