"""Running inline steps in the decider's process (the `InlineTasks` port of orbit/service/inline.py).

Which function runs an inline attempt, in this order:
1. a code workflow's `ctx.run(fn, *args)`: the function object the replay handed over for this
   execution and unit, called as `fn(*args)`. A process that did not replay the call (a restart,
   a hand-over) replays the workflow first (orbit/service/inline.py, `recall`): the replay reaches
   the `ctx.run` call again and so holds the very closure;
2. a task registered with `@orbit.worker.task(name)` in this process (the decider imports the
   modules named in ORBIT_INLINE_MODULES at cold start, the deployer's InlineTaskModules; the local
   stack serves the tasks its workers registered), called as `fn(input, ctx)` exactly as a worker would.
Nothing else. A task name is never imported: the name comes from a definition (caller data) or from
history, and `os:system` must not be a function a definition can call (issue 25, docs/security.md).
Nothing found: the step fails with INLINE_TASK_NOT_FOUND (not retryable), naming the task, the
modules the decider imports and any that failed to import. A process that knows its tasks refuses
such a definition when it is registered (`served`, orbit/service/registration_checks.py `check_registration`);
a definition stored before its task went away fails at that step instead of stranding its execution.

An attempt runs on a daemon thread of its own while it runs, waited for at most its limit (the
step's timeout and the invocation's remaining time, from InlineRunner.limit_ms). Past it the attempt
fails with TIMEOUT (retryable, so the retry policy decides); Python cannot stop the thread, whose
late result is dropped (it is frozen with the invocation on Lambda). Threads are reused (`_Runners`):
starting one costs about 1 ms, as much as the rest of a short inline step, while handing an attempt
to an idle one costs tens of microseconds. A thread is lent to one attempt at a time, and each
attempt runs in a fresh `contextvars` context, as on a new thread; one that overran its limit is
only lent again once its late attempt has returned.
"""

from __future__ import annotations

import contextvars
import importlib
import json
import logging
import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from orbit.core.history.effects import DispatchTask
from orbit.core.history.events import TIMEOUT, TaskError
from orbit.core.runtime.code.inline import Closures
from orbit.worker.context import TaskContext
from orbit.worker.tasks import registered_tasks, storable

log = logging.getLogger("orbit.worker.inline")
NOT_FOUND = "INLINE_TASK_NOT_FOUND"


def modules_from_env(value: str | None) -> list[str]:
    """ORBIT_INLINE_MODULES: module names separated by commas or spaces."""
    return [m for m in (value or "").replace(",", " ").split() if m]


def served_by(modules: list[str]) -> Callable[[], frozenset[str] | None]:
    """For a process that registers definitions but runs no inline step (the deployed API): the
    task names `modules` register, imported at the first registration that asks. None when one of
    them fails to import here: registration then cannot tell, and the decider reports the step."""
    known: list[frozenset[str] | None] = []

    def served() -> frozenset[str] | None:
        if not known:
            tasks = InlineTasks(modules)
            known.append(None if tasks.import_errors else tasks.served())
        return known[0]

    return served


class InlineTasks:
    def __init__(self, modules: Iterable[str] = (), tasks: Mapping[str, Any] | None = None) -> None:
        self.modules = list(modules)
        self._tasks = tasks
        self.import_errors: dict[str, str] = {}
        for name in self.modules:  # at cold start, so every step sees the same set of tasks
            try:
                importlib.import_module(name)
            except Exception as e:  # noqa: BLE001 - reported by every step that needed the module
                self.import_errors[name] = f"{type(e).__name__}: {e}"
                log.error("inline task module %s failed to import: %s", name, e)

    def served(self) -> frozenset[str]:
        """The task names an inline step may name: those registered with @orbit.worker.task here."""
        return frozenset(self._tasks if self._tasks is not None else registered_tasks())

    def run(self, d: DispatchTask, limit_ms: int,
            closures: Closures | None = None) -> tuple[Any, TaskError | None]:
        """Run attempt `d` within `limit_ms`: a `ctx.run` step's function from `closures` (the
        decider's code runtime's table: what its replay passed), else a registered task."""
        # The task gets a private copy of its input, and what it returns is copied too: both are
        # parts of the (cached, in place) state, which a task keeping a reference must not alter.
        d = replace(d, input=json.loads(json.dumps(d.input)))
        call = self._resolve(d, closures)
        if isinstance(call, TaskError):
            return None, call
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["output"] = call()
            except TaskError as e:
                box["error"] = e
            except Exception as e:  # the step's failure, retryable like a worker's
                log.exception("inline task %s (%s/%s) raised", d.task, d.execution_id, d.unit)
                box["error"] = TaskError("TASK_FAILED", f"{type(e).__name__}: {e}", retryable=True)
            except BaseException as e:  # noqa: BLE001 - SystemExit and the like: raised in the invocation
                box["fatal"] = e

        if not _RUNNERS.run(target, f"inline:{d.unit}", max(limit_ms, 0) / 1000):
            return None, TaskError(TIMEOUT, f"attempt {d.attempt} of {d.task!r} did not finish within "
                                            f"{limit_ms} ms (inline: the step's timeout, bounded by the "
                                            "time the decider's invocation had left)")
        if "fatal" in box:  # the process is going down as a worker's would: the lease decides later
            raise box["fatal"]
        output, error = storable(box.get("output"), box.get("error"))  # the worker's rule (worker/sdk.py)
        if error is not None:
            return None, error
        return json.loads(json.dumps(output)), None

    def _resolve(self, d: DispatchTask, closures: Closures | None) -> Callable[[], Any] | TaskError:
        fn = closures.get(d.execution_id, d.unit) if closures is not None else None
        args = d.input if isinstance(d.input, list) else [d.input]
        if fn is not None:
            return lambda: fn(*args)
        tasks = self._tasks if self._tasks is not None else registered_tasks()
        task = tasks.get(d.task)
        if task is not None:
            ctx = TaskContext(d.execution_id, d.unit, d.attempt, d.idempotency_key, d.token, d.deadline_ms,
                              redelivery=d.redelivery)
            return lambda: task(d.input, ctx)
        return TaskError(NOT_FOUND, self._why_not_found(d), retryable=False)

    def _why_not_found(self, d: DispatchTask) -> str:
        where = (f"ORBIT_INLINE_MODULES ({', '.join(self.modules)})" if self.modules
                 else "ORBIT_INLINE_MODULES (empty)")
        msg = (f"inline task {d.task!r} of step {d.unit!r} is not served by this decider: no module in "
               f"{where} registers it with @orbit.worker.task (a code workflow's ctx.run function is found "
               "by replaying the workflow; nothing is imported by name)")
        if self.import_errors:
            msg += "; failed to import: " + "; ".join(f"{m} ({e})" for m, e in self.import_errors.items())
        return msg


class _Runner:
    """A daemon thread that runs the jobs it is lent, one at a time."""

    def __init__(self, pool: _Runners) -> None:
        self.jobs: queue.SimpleQueue[tuple[Callable[[], None], str, threading.Event]] = queue.SimpleQueue()
        self._pool = pool
        thread = threading.Thread(target=self._loop, name="inline", daemon=True)
        thread.start()
        self.ident = thread.ident

    def _loop(self) -> None:
        me = threading.current_thread()
        while True:
            target, name, done = self.jobs.get()
            me.name = name
            try:
                contextvars.Context().run(target)  # an empty context, as a new thread starts with
            except BaseException:  # targets catch everything; the thread must live on
                log.exception("inline runner: %s raised", name)
            finally:
                self._pool.release(self)  # idle again before the caller wakes: it may lend it at once
                done.set()


class _Runners:
    """Idle runner threads, lent one per attempt (a new one only when none is idle)."""

    def __init__(self) -> None:
        self._idle: list[_Runner] = []
        self._lock = threading.Lock()

    def run(self, target: Callable[[], None], name: str, timeout_s: float) -> bool:
        """Run `target` on a runner thread, waiting at most `timeout_s`; False if it is still running."""
        with self._lock:
            runner = self._idle.pop() if self._idle else None
        if runner is None:
            runner = _Runner(self)
        done = threading.Event()
        runner.jobs.put((target, name, done))
        return done.wait(timeout_s)

    def release(self, runner: _Runner) -> None:
        with self._lock:
            self._idle.append(runner)


_RUNNERS = _Runners()
