"""One daemon thread per process times every running task's grace period and keep-alive.

A task used to start a `threading.Timer` for its grace period and a keep-alive thread: two thread
starts per task, although a quick task (nearly all of them) cancels both before they ever fire. Here
a task only pushes due times on a heap; the process's single scheduler thread sleeps until the
earliest one. A callback that comes due runs on a thread of its own (only long tasks get there), so
a slow extension or send of one task never delays another task's callbacks. Same semantics as the
threads it replaces:
- a one-shot callback (the grace period) runs once at its due time unless cancelled first;
- a periodic one (the keep-alive) runs every `period_s` after the previous run ended, until
  cancelled; runs of one handle never overlap; a run that raises is logged and the next one is
  still scheduled (a failed extension never kills the task);
- `cancel(handle, timeout)` stops any future run and waits (up to `timeout`, None: for good) for a
  run in progress to end, like `Timer.cancel(); Timer.join()`.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable

log = logging.getLogger("orbit.worker")


class Handle:
    """One scheduled callback; pass it to `Timers.cancel`."""

    __slots__ = ("fn", "period_s", "cancelled", "running", "idle")

    def __init__(self, fn: Callable[[], None], period_s: float | None) -> None:
        self.fn = fn
        self.period_s = period_s
        self.cancelled = False
        self.running = False
        self.idle = threading.Event()
        self.idle.set()


class Timers:
    """The scheduler: `after(delay_s, fn, period_s=None) -> Handle`, `cancel(handle, timeout)`."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._heap: list[tuple[float, int, Handle]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._dead = 0  # cancelled handles still on the heap (removed lazily, compacted when many)

    def after(self, delay_s: float, fn: Callable[[], None], period_s: float | None = None) -> Handle:
        handle = Handle(fn, period_s)
        with self._cond:
            self._push(self._monotonic() + delay_s, handle)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="orbit-task-timers", daemon=True)
                self._thread.start()
        return handle

    def cancel(self, handle: Handle, timeout: float | None = None) -> None:
        with self._cond:
            if not handle.cancelled:
                handle.cancelled = True
                self._dead += 1
                if self._dead > 64 and self._dead * 2 > len(self._heap):
                    self._heap = [e for e in self._heap if not e[2].cancelled]
                    heapq.heapify(self._heap)
                    self._dead = 0
            running = handle.running
        if running:
            handle.idle.wait(timeout)

    def _push(self, when: float, handle: Handle) -> None:  # under the lock
        heapq.heappush(self._heap, (when, next(self._seq), handle))
        if self._heap[0][2] is handle:
            self._cond.notify()  # a new earliest due time: the loop sleeps less

    def _loop(self) -> None:
        with self._cond:
            while True:
                while self._heap and self._heap[0][2].cancelled:
                    heapq.heappop(self._heap)
                    self._dead = max(0, self._dead - 1)
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - self._monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                handle = heapq.heappop(self._heap)[2]
                handle.running = True
                handle.idle.clear()
                try:
                    threading.Thread(target=self._run, args=(handle,), name="orbit-task-timer",
                                     daemon=True).start()
                except RuntimeError:  # no thread to be had right now: try again shortly
                    log.warning("could not start a thread for a task's timed callback; retrying")
                    handle.running = False
                    handle.idle.set()
                    self._push(self._monotonic() + 0.05, handle)

    def _run(self, handle: Handle) -> None:
        try:
            handle.fn()
        except Exception:  # logged like an uncaught Timer exception was; a periodic run goes on
            log.warning("a task's timed callback failed", exc_info=True)
        finally:
            with self._cond:
                handle.running = False
                if handle.period_s is not None and not handle.cancelled:
                    self._push(self._monotonic() + handle.period_s, handle)
                handle.idle.set()


_TIMERS = Timers()


def timers() -> Timers:
    """The process's scheduler (one thread for every Worker of the process)."""
    return _TIMERS


def _after_fork() -> None:  # a forked child has no scheduler thread and may hold a copied lock
    global _TIMERS
    _TIMERS = Timers()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
