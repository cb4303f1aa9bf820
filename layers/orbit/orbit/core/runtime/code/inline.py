"""`ctx.run(fn, *args)`: a plain Python callable run as an inline step of a code workflow.

The call is a task step like `ctx.step` (same events, same unit key `<pos>.<name>`, same retry
and timeout options) whose task is `module:qualname` of the function (a label for history and the
views, never looked up) and whose input is the list of arguments; the decider runs it in its own
invocation (orbit/service/inline.py) instead of sending it to a queue. The function object itself
is handed at every call to the replay's `closures` (a table per (execution, unit) that the host keeps:
`orbit/service/replay_host.py`), so closures and lambdas run with the values they captured in *this*
execution. A decider that did not replay the call (another process picking up
after a crash or a hand-over) replays the workflow first, which reaches this call again and
remembers the function (orbit/service/inline.py `recall`); no function is ever imported by its
recorded name, which a definition could otherwise choose (issue 25, docs/security.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from orbit.core.definition.inline import SEMANTICS
from orbit.core.runtime.code.specs import Step


class Closures(Protocol):
    """Where a replay hands the function of each `ctx.run` call (the host's table)."""

    def remember(self, execution_id: str, unit: str, fn: Callable[..., Any]) -> None: ...

    def get(self, execution_id: str, unit: str) -> Callable[..., Any] | None: ...


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
    closures: Closures | None = replay.closures
    if closures is not None:
        unit = f"{getattr(replay, 'prefix', '')}{replay.position + 1}.{spec.label}"
        closures.remember(replay.execution_id, unit, fn)
    return replay.step(spec)

