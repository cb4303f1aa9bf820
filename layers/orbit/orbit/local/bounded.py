"""`orbit dev`'s engine lock, and the workflow author's code run beside it under a time bound.

The dev server's request threads and its queue pump share one engine and take turns under
`EngineLock`. A query handler or an update validator is the workflow author's code, run inside a
request: `run_bounded` runs it on a thread of its own while the request lets go of the lock
(`EngineLock.released`), so other requests and the pump go on meanwhile, and gives up on it after
the bound. A thread still running then is asked to stop: an exception is raised in it at its next
Python instruction (CPython's PyThreadState_SetAsyncExc), which ends a loop in Python code; code
blocked inside a C call (a long `time.sleep`) ends when that call returns. Either way the caller
has its answer and nothing waits for that thread.
"""

from __future__ import annotations

import contextvars
import ctypes
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from orbit.errors import UserCodeStopped

USER_CODE_TIMEOUT_S = 5.0
"""How long `orbit dev` lets a query handler or an update validator (with its replay) run."""


class _Stop(BaseException):
    """Raised inside user code that ran past its bound; a BaseException, so `except Exception`
    in that code does not swallow it."""


class EngineLock:
    """A lock that knows its holder, so code holding it can let go around a call (`released`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None

    def __enter__(self) -> EngineLock:
        self._lock.acquire()
        self._owner = threading.get_ident()
        return self

    def __exit__(self, *exc: object) -> None:
        self._owner = None
        self._lock.release()

    def held(self) -> bool:
        return self._owner == threading.get_ident()

    @contextmanager
    def released(self) -> Iterator[None]:
        """Let go of the lock for the block when this thread holds it; take it back after."""
        if not self.held():
            yield
            return
        self.__exit__()
        try:
            yield
        finally:
            self.__enter__()


def run_bounded(fn: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """`fn()` on a thread of its own, in a copy of this context; its answer or its exception.
    UserCodeStopped when it runs past `timeout_s` (USER_CODE_TIMEOUT) or raises a BaseException
    that is not an Exception (USER_CODE_ERROR): SystemExit from a handler is its failure."""
    context = contextvars.copy_context()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = context.run(fn)
        except _Stop:
            pass  # given up on already; nobody reads the box any more
        except BaseException as e:  # noqa: BLE001 - handed to the caller, whatever it is
            box["error"] = e

    thread = threading.Thread(target=target, name="orbit-user-code", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        _stop(thread)
        raise UserCodeStopped("USER_CODE_TIMEOUT", f"{what} ran past {timeout_s:g} s and was stopped; "
                              "a handler must answer from the state it has, without waiting or looping")
    error = box.get("error")
    if error is None:
        return box.get("value")
    if isinstance(error, Exception):
        raise error
    raise UserCodeStopped("USER_CODE_ERROR", f"{what} raised {type(error).__name__}: {error}")


def _stop(thread: threading.Thread) -> None:
    if thread.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(_Stop))
