"""Inline steps in definitions: `inline: true` (+ `semantics:`) on a task step.

An inline step runs inside the decider's own invocation instead of on a worker queue
(docs/inline-steps.md). What is checked here, with the rest of a definition:
- `inline` is a boolean, `semantics` is at_least_once | at_most_once and needs `inline: true`;
- an inline step has no queue (`queue`, `queue_timeout`) and no heartbeats (`heartbeat_timeout`):
  nothing sits in a queue and the decider is the one running it;
- its attempt timeout fits in one Lambda invocation (900 s, the Lambda maximum). The deployed
  decider's own timeout is tighter: `inline_timeout_problems` checks it where a definition is
  registered (the API knows the decider's timeout from ORBIT_DECIDER_TIMEOUT_S).

An inline step runs only a function registered with `@orbit.worker.task` by a module the deployer
listed (docs/security.md): where a definition is registered by a process that knows that set (the
local stack; a deployed API given InlineTaskModules), `unserved_inline_problems` refuses a step
whose task is not in it. Nothing is ever imported because a definition names it. A stored
definition whose task is gone fails that step with INLINE_TASK_NOT_FOUND (orbit/worker/inline.py).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

from orbit.core.definition.checks import Problems, check_duration, join, type_name
from orbit.errors import Problem

AT_LEAST_ONCE = "at_least_once"
AT_MOST_ONCE = "at_most_once"
SEMANTICS = (AT_LEAST_ONCE, AT_MOST_ONCE)
MAX_INLINE_TIMEOUT_MS = 900_000  # the longest a Lambda invocation can run
# An inline step without a timeout: its attempt (and the lease other deciders respect) lasts this
# long at most, and never past what the invocation has left. Below every allowed decider timeout.
DEFAULT_INLINE_TIMEOUT_MS = 15_000
NOT_INLINE = ("queue", "queue_timeout", "heartbeat_timeout", "on_missing_worker")


def check_inline(body: dict[Any, Any], path: str, out: Problems) -> None:
    """The inline keys of one step body (the kind check refuses them on other kinds)."""
    inline = body.get("inline")
    if "inline" in body and not isinstance(inline, bool):
        out.add(join(path, "inline"), f"must be true or false, not {type_name(inline)}")
    if "semantics" in body:
        if body["semantics"] not in SEMANTICS:
            out.add(join(path, "semantics"), f"must be {' or '.join(SEMANTICS)}, not {body['semantics']!r}")
        elif inline is not True:
            out.add(join(path, "semantics"), "only applies to an inline step (add `inline: true`)")
    if inline is not True:
        return
    for key in NOT_INLINE:
        if key in body:
            out.add(join(path, key), "an inline step runs in the decider, not on a worker queue: "
                                     f"remove `{key}` or `inline`")
    if "timeout" in body:
        ms = check_duration(body["timeout"], join(path, "timeout"), Problems())
        if ms is not None and ms > MAX_INLINE_TIMEOUT_MS:
            out.add(join(path, "timeout"), f"an inline step runs inside one Lambda invocation: at most "
                                           f"{MAX_INLINE_TIMEOUT_MS // 1000}s, not {body['timeout']}")


def inline_semantics(body: dict[str, Any]) -> str | None:
    """None for a worker step, else the step's semantics (at_least_once unless it says otherwise)."""
    if body.get("inline") is not True:
        return None
    return str(body.get("semantics") or AT_LEAST_ONCE)


def inline_timeout(timeout_ms: int | None) -> int:
    return timeout_ms if timeout_ms is not None else DEFAULT_INLINE_TIMEOUT_MS


def inline_steps(definition: Any) -> Iterator[tuple[str, Any]]:
    """(path, step) of every inline step of a definition: its steps, their compensations and the
    steps of its signal handlers (a code workflow has none: its ctx.run functions are its own code)."""
    todo: list[tuple[str, Any]] = [(f"steps.{n}", s) for n, s in getattr(definition, "steps", {}).items()]
    for h, handler in getattr(definition, "handlers", {}).items():
        todo += [(f"on_signal.{h}.steps.{n}", s) for n, s in handler.steps.items()]
    while todo:
        path, step = todo.pop(0)
        if getattr(step, "inline", None) is not None:
            yield path, step
        if getattr(step, "compensate", None) is not None:
            todo.append((f"{path}.compensate", step.compensate))


def unserved_inline_problems(definition: Any, served: Collection[str]) -> list[Problem]:
    """Inline steps whose task is not one of `served` (the tasks registered with @orbit.worker.task
    by the modules the deployer listed): refused where the definition is registered."""
    return [Problem(f"{path}.task", f"inline task {step.task!r} of step {step.name!r} is not "
                                    "registered with @orbit.worker.task by any module the decider serves "
                                    f"({_names(served)}); inline steps run only registered tasks, never "
                                    "a function imported by name")
            for path, step in inline_steps(definition) if step.task not in served]


def _names(served: Collection[str]) -> str:
    names = sorted(served)
    if not names:
        return "none"
    return ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")


def inline_timeout_problems(definition: Any, function_timeout_ms: int) -> list[Problem]:
    """Inline steps whose attempt timeout is longer than the decider function's timeout: such an
    attempt could never finish inside one invocation, so the definition is refused."""
    problems = []
    for path, step in inline_steps(definition):
        ms = inline_timeout(step.timeout_ms)
        if ms > function_timeout_ms:
            problems.append(Problem(
                f"{path}.timeout",
                f"an inline step's timeout ({ms // 1000}s) must fit in the decider's timeout "
                f"({function_timeout_ms // 1000}s): shorten it, raise the DeciderTimeout parameter, "
                "or run the step on a worker"))
    return problems
