"""A bound on workflow code that runs without a durable call (issue 27, section 4).

Replay is deterministic only if it never looks at the clock, so the bound lives here, in the host,
not in the core: `StallGuard` is installed as `CodeRuntime.guard` and wraps each feed of a paused
workflow. While it is armed, a timer signal (`SIGALRM`, every quarter of the budget) looks at how
many durable calls the workflow has made (`Replay.calls`, in any branch); when none was made for a
whole budget it raises `Stalled` in whatever code is running, naming the workflow and the line of
the user's code it was at. The decision fails (the queue retries it; the instance is dropped) and
the decider goes on serving other executions.

Python runs signal handlers on the main thread only. On any other thread (`orbit dev`'s pump and
request threads, which decide and run queries there) the same check is made by one watchdog thread
for the whole process (`_Watchdog`, started at the first such feed), which raises the exception in
the stalled thread at its next Python instruction (CPython's `PyThreadState_SetAsyncExc`): a loop
in Python code ends there; a call blocked in C (a long `time.sleep`) ends when it returns. Each
guarded feed costs an arm and a disarm under a lock (docs/decisions/sec6-user-code-bounds.md).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from orbit.core.runtime.code.errors import Stalled

DEFAULT_BUDGET_S = float(os.environ.get("ORBIT_CODE_BUDGET_S", "5"))
_ORBIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_line(frame: FrameType | None) -> str:
    """`file:line` of the innermost frame outside orbit's own code (the user's), or ''."""
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith((_ORBIT_DIR, "<")) and "/greenlet/" not in name:
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


class StallGuard:
    """`CodeRuntime.guard`: `with guard(workflow, calls): feed` fails the feed once `calls()` stands
    still for `budget_s` seconds (at most `remaining_s()` when given: a Lambda's remaining time)."""

    def __init__(self, budget_s: float | None = None,
                 remaining_s: Callable[[], float] | None = None) -> None:
        self.budget_s = float(os.environ.get("ORBIT_CODE_BUDGET_S", DEFAULT_BUDGET_S)) if budget_s is None \
            else budget_s
        self.remaining_s = remaining_s

    @contextmanager
    def __call__(self, workflow: str, calls: Callable[[], int]) -> Iterator[None]:
        budget = self.budget_s
        if self.remaining_s is not None:
            budget = max(0.05, min(budget, self.remaining_s() * 0.8))
        if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
            with _WATCHDOG.watching(workflow, calls, budget):  # signals reach the main thread only
                yield
            return
        seen = [calls(), time.monotonic()]
        armed = [True]

        def tick(signum: int, frame: FrameType | None) -> Any:
            if not armed[0]:
                return
            now, n = time.monotonic(), calls()
            if n != seen[0]:
                seen[0], seen[1] = n, now
            elif now - seen[1] >= budget:
                armed[0] = False
                where = user_line(frame)
                at = f", at {where}" if where else ""
                raise Stalled(_message(workflow, now - seen[1], budget, at))

        previous = signal.signal(signal.SIGALRM, tick)
        started = time.monotonic()
        other = signal.setitimer(signal.ITIMER_REAL, budget / 4, budget / 4)  # someone else's alarm
        try:
            yield
        finally:
            armed[0] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if other[0] > 0:  # given back, late by at most this feed (e.g. pytest-timeout's)
                signal.setitimer(signal.ITIMER_REAL, max(other[0] - (time.monotonic() - started), 0.001),
                                 other[1])


def _message(workflow: str, ran_s: float, budget: float, at: str) -> str:
    return (f"workflow {workflow!r} ran {ran_s:.1f} s without a durable call (budget {budget:g} s, "
            f"ORBIT_CODE_BUDGET_S){at}")


class _Overran(Stalled):
    """What the watchdog raises in a stalled thread (an exception class: it cannot carry the text);
    the guard around the feed turns it into `Stalled` with the message (raised in the few
    instructions between the feed's end and the disarm, it keeps this one)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*(args or ("workflow code ran past its budget without a durable call "
                                    "(ORBIT_CODE_BUDGET_S)",)))


class _Watch:
    def __init__(self, workflow: str, calls: Callable[[], int], budget: float) -> None:
        self.workflow, self.calls, self.budget = workflow, calls, budget
        self.thread = threading.get_ident()
        self.seen, self.since = calls(), time.monotonic()
        self.message = ""  # set when it fired


class _Watchdog:
    """The off-main-thread guard: one daemon thread looks at every armed feed each quarter of the
    smallest budget, and raises `_Overran` in a thread whose feed made no durable call for its
    budget. Arming and firing share a lock, so a feed that has ended is never raised into."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watches: set[_Watch] = set()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @contextmanager
    def watching(self, workflow: str, calls: Callable[[], int], budget: float) -> Iterator[None]:
        watch = _Watch(workflow, calls, budget)
        with self._lock:
            self._watches.add(watch)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="orbit-stall-watchdog", daemon=True)
                self._thread.start()
        self._wake.set()  # a smaller budget may need a shorter tick
        try:
            yield
        except _Overran:
            raise Stalled(watch.message) from None
        finally:
            with self._lock:
                self._watches.discard(watch)
                if watch.message:  # fired: take back the exception if it was not raised yet
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(watch.thread), None)

    def _run(self) -> None:
        while True:
            with self._lock:  # nothing armed: sleep until a feed arms (it sets _wake)
                tick = min((w.budget / 4 for w in self._watches), default=None)
            self._wake.wait(tick)
            self._wake.clear()
            self._check()

    def _check(self) -> None:
        frames = None
        with self._lock:
            now = time.monotonic()
            for w in self._watches:
                if w.message:
                    continue
                n = w.calls()
                if n != w.seen:
                    w.seen, w.since = n, now
                elif now - w.since >= w.budget:
                    frames = frames if frames is not None else sys._current_frames()
                    where = user_line(frames.get(w.thread))
                    at = f", at {where}" if where else ""
                    w.message = _message(w.workflow, now - w.since, w.budget, at)
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(w.thread),
                                                               ctypes.py_object(_Overran))


_WATCHDOG = _Watchdog()  # one per process: the threads it watches are the process's
