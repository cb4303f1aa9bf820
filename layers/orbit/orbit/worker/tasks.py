"""The process's task functions: `@task(name)` registers one, `registered_tasks()` lists them.

One name is one function: the same function imported again (a reload, the local stack loading
`functions/*/app.py` under a fresh module name) replaces itself, a different one is refused naming
both. `storable` is what every attempt's outcome passes through before it is sent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from orbit.core.history.events import TaskError
from orbit.core.history.storable import not_storable
from orbit.errors import DuplicateTask, ValidationError

if TYPE_CHECKING:
    from orbit.worker.context import TaskContext

TaskFunction = Callable[[Any, "TaskContext"], Any]

_TASKS: dict[str, TaskFunction] = {}
_NO_DEDUPE: set[str] = set()
_TASKS_LOCK = threading.Lock()


def task(name: str, *, dedupe: bool = True) -> Callable[[TaskFunction], TaskFunction]:
    """Register `fn(input, ctx) -> output` as the worker for task `name` (process-wide).

    `dedupe=False` is for tasks that are idempotent by nature (a read, an upsert
    keyed by the idempotency key): no idempotency record is read or written,
    which saves about a third of a step's table cost; a redelivery runs it again.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("task name must be a non-empty string", "task")

    def register(fn: TaskFunction) -> TaskFunction:
        if not callable(fn):
            raise ValidationError(f"@task({name!r}) needs a function (input, ctx) -> output", "task")
        with _TASKS_LOCK:
            held = _TASKS.get(name)
            if held is not None and _identity(held) != _identity(fn):
                raise DuplicateTask(f"task {name!r} is registered twice: by {_where(held)} and by "
                                    f"{_where(fn)}; rename one of them")
            _TASKS[name] = fn  # the same function imported again (a reload, a second module name) replaces
            (_NO_DEDUPE.discard if dedupe else _NO_DEDUPE.add)(name)
        return fn

    return register


def _origin(fn: Any) -> tuple[str, str, int]:
    """(qualname, file, line) of a task function: one name, one function, wherever it is imported from.

    The same file imported under two module names (the local stack loads `functions/*/app.py` under a
    fresh name each time) gives the same qualname and file: that is the same function, not a rival."""
    import inspect
    from pathlib import Path

    inner = inspect.unwrap(fn)
    code = getattr(inner, "__code__", None)
    qualname = str(getattr(inner, "__qualname__", None) or type(inner).__qualname__)
    if code is None:
        return qualname, str(getattr(inner, "__module__", "?")), 0
    return qualname, str(Path(code.co_filename).resolve()), int(code.co_firstlineno)


def _identity(fn: Any) -> tuple[str, str, int]:
    """What makes two registrations the same function: qualname and file; a lambda's line too (two
    lambdas of one file share the qualname `<lambda>`)."""
    qualname, file, line = _origin(fn)
    return qualname, file, line if qualname.endswith("<lambda>") else 0


def _where(fn: Any) -> str:
    qualname, file, line = _origin(fn)
    return f"{qualname} ({file}:{line})" if line else f"{qualname} ({file})"


def registered_tasks() -> dict[str, TaskFunction]:
    with _TASKS_LOCK:
        return dict(_TASKS)


def storable(output: Any, error: TaskError | None) -> tuple[Any, TaskError | None]:
    """An attempt's outcome as it can be sent and stored: a result or error history cannot store (a
    datetime, a set, bytes, a Decimal, a lone surrogate, NaN, JSON nested too deep) fails the attempt
    with VALUE_NOT_STORABLE, not retried, naming the path (`output.items[2].when: datetime is not JSON
    data`). Left as it was, the encoder would raise and no answer would ever be sent."""
    if error is None:
        refused = not_storable(output, "output")
    else:
        refused = not_storable(error.to_dict(), "error",
                               f"the task failed with {error.code!r}, and its error cannot be stored: ")
    return (output, error) if refused is None else (None, refused)


