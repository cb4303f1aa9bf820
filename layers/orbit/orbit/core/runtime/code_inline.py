"""`ctx.run(fn, *args)`: a plain Python callable run as an inline step of a code workflow.

The call is a task step like `ctx.step` (same events, same unit key `<pos>.<name>`, same retry
and timeout options) whose task is `module:qualname` of the function (a label for history and the
views, never looked up) and whose input is the list of arguments; the decider runs it in its own
invocation (orbit/service/inline.py) instead of sending it to a queue. The function object itself
is remembered per (execution, unit) at every call, so closures and lambdas run with the values they
captured in *this* execution. A decider that did not replay the call (another process picking up
after a crash or a hand-over) replays the workflow first, which reaches this call again and
remembers the function (orbit/service/inline.py `recall`); no function is ever imported by its
recorded name, which a definition could otherwise choose (issue 25, docs/security.md).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from orbit.core.definition.inline import SEMANTICS
from orbit.core.runtime.code_specs import Step

MAX_REMEMBERED = 4096  # (execution, unit) -> callable; a bounded LRU, oldest dropped
_CALLABLES: OrderedDict[tuple[str, str], Callable[..., Any]] = OrderedDict()
_LOCK = threading.Lock()


def task_name(fn: Callable[..., Any]) -> str:
    """The task name history records for `fn`: `module:qualname`."""
    return f"{getattr(fn, '__module__', None) or '?'}:{getattr(fn, '__qualname__', None) or repr(fn)}"


def run_inline(replay: Any, fn: Any, args: tuple[Any, ...], name: str | None, retry: Any, timeout: Any,
               semantics: str, on_exhausted: str) -> Any:
    if not callable(fn):
        raise TypeError(f"ctx.run needs a function, got {fn!r}")
    if semantics not in SEMANTICS:
        raise TypeError(f"ctx.run semantics must be one of {SEMANTICS}, got {semantics!r}")
    label = name or getattr(fn, "__name__", None) or "run"
    if label == "<lambda>":
        label = "lambda"
    spec = Step(task_name(fn), list(args), label, None, retry, timeout, None, on_exhausted, inline=semantics)
    # the key step() takes (a branch's or scope's calls carry its key prefix)
    remember(replay.execution_id, f"{getattr(replay, 'prefix', '')}{replay.position + 1}.{spec.label}", fn)
    return replay.step(spec)


def remember(execution_id: str, unit: str, fn: Callable[..., Any]) -> None:
    with _LOCK:
        _CALLABLES[(execution_id, unit)] = fn
        _CALLABLES.move_to_end((execution_id, unit))
        while len(_CALLABLES) > MAX_REMEMBERED:
            _CALLABLES.popitem(last=False)


def callable_for(execution_id: str, unit: str) -> Callable[..., Any] | None:
    with _LOCK:
        return _CALLABLES.get((execution_id, unit))
