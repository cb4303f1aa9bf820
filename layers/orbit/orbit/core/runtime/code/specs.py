"""What a workflow asks for: step specs and their translation into `StepCommand`s.

Kept apart from the replay so the option parsing (retry policies in the
definition format, durations, `on_exhausted`) reads as one idea.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, NoReturn

from orbit.core.definition.durations import parse_duration
from orbit.core.history.storable import NotStorable, not_storable
from orbit.core.history.task_error import retry_on_problems
from orbit.core.runtime.commands import CONTINUE_WORKFLOW, FAIL_RUN, RetryPolicy, StepCommand
from orbit.core.runtime.dsl.interpreter import (
    default_queue,  # one rule for both runtimes: prefix before the first "."
)

ON_EXHAUSTED = (FAIL_RUN, CONTINUE_WORKFLOW)


def as_json(value: Any, what: str, where: str = "value") -> Any:
    """`value` as history will store it (a private JSON copy), or NotStorable naming `what`, the
    path inside the value from `where` and the type found there (VALUE_NOT_STORABLE).

    Checking here fails the workflow at the call that passed the value, not later in a store,
    and the code can never alias (and later mutate) what was recorded.
    """
    if value is None or isinstance(value, (bool, int, float)) or (isinstance(value, str) and value.isascii()):
        return value if not isinstance(value, float) or math.isfinite(value) else _refuse(value, what, where)
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")  # a lone surrogate: no store can write it
    except (TypeError, ValueError, RecursionError):
        _refuse(value, what, where)
    return json.loads(text)


def _refuse(value: Any, what: str, where: str) -> NoReturn:
    prefix = f"{what} must be JSON data: "
    raise not_storable(value, where, prefix) or NotStorable(prefix + "it cannot be stored")


def retry_policy(retry: Any) -> RetryPolicy:
    """Accept the definition format (`{max_attempts, backoff: "1s", multiplier, max_backoff,
    jitter, non_retryable, retry_on}`), the same keys in ms (`backoff_ms`), a RetryPolicy, or None."""
    if retry is None or isinstance(retry, RetryPolicy):
        return retry or RetryPolicy()
    if isinstance(retry, int) and not isinstance(retry, bool):
        return RetryPolicy(max_attempts=retry)
    if not isinstance(retry, dict):
        raise TypeError(f"retry must be a dict like {{'max_attempts': 3, 'backoff': '1s'}}, got {retry!r}")
    known = {"max_attempts", "backoff", "backoff_ms", "multiplier", "max_backoff", "max_backoff_ms",
             "jitter", "non_retryable", "retry_on"}
    unknown = sorted(set(retry) - known)
    if unknown:
        raise TypeError(f"retry has unknown keys {unknown}; known: {sorted(known)}")
    d = dict(retry)
    attempts = d.get("max_attempts", 1)
    if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 1:
        raise TypeError(f"retry.max_attempts must be an int >= 1, got {attempts!r}")
    for short in ("backoff", "max_backoff"):
        if short in d:
            d[short + "_ms"] = parse_duration(d.pop(short))
    if d.get("jitter", "none") not in ("none", "full"):
        raise TypeError(f"retry.jitter must be 'none' or 'full', got {d['jitter']!r}")
    for key in ("non_retryable", "retry_on"):
        if not isinstance(d.get(key, []), (list, tuple)):
            raise TypeError(f"retry.{key} must be a list of error codes, got {d[key]!r}")
    problems = retry_on_problems(list(d.get("retry_on", [])), list(d.get("non_retryable", [])))
    if problems:
        raise TypeError(f"retry.retry_on: {'; '.join(problems)}")
    return RetryPolicy.of(d)


def optional_ms(value: Any, what: str) -> int | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as e:
        raise TypeError(f"{what}: {e}") from None


@dataclass(frozen=True)
class Step:
    """One step to run on a worker, as given to `ctx.step`, `ctx.parallel` and `ctx.map`.

    `name` (default: the task name) is the readable part of the unit key; the
    full key is `<position>.<name>` so it stays unique when a task runs twice.
    """

    task: str
    input: Any = None
    name: str | None = None
    queue: str | None = None
    retry: Any = None
    timeout: Any = None
    queue_timeout: Any = None
    on_exhausted: str = FAIL_RUN
    # Undo of this step when the execution fails, is cancelled or times out: a Step, a
    # (task, input) tuple, or a function of the step's output returning one.
    compensate: Any = None
    # Once a worker reports `started`: the longest gap between its ctx.heartbeat calls.
    heartbeat_timeout: Any = None
    # `ctx.run`: run in the decider's invocation ("at_least_once" | "at_most_once"), no queue.
    inline: str | None = None
    # A worker with no function for the task: "wait" (None, the default) in the queue, or "fail".
    on_missing_worker: str | None = None
    # Flow control (docs/flow-control.md): the key this step counts under on its task's limits and
    # its priority 1 (highest) .. 5 in their lines; None: what the limit declares.
    key: str | None = None
    priority: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.task, str) or not self.task:
            raise TypeError(f"a step needs a task name (non-empty string), got {self.task!r}")
        if self.on_exhausted not in ON_EXHAUSTED:
            raise TypeError(f"on_exhausted must be one of {ON_EXHAUSTED}, got {self.on_exhausted!r}")
        if self.name is not None and (not isinstance(self.name, str) or not self.name or "[" in self.name):
            raise TypeError(f"step name must be a non-empty string without '[', got {self.name!r}")
        if self.compensate is not None and not callable(self.compensate):
            as_step(self.compensate)  # fail now, at the call, with the reason
        if self.on_missing_worker not in (None, "wait", "fail"):
            raise TypeError(f"on_missing_worker must be 'wait' or 'fail', got {self.on_missing_worker!r}")
        if self.key is not None or self.priority is not None:
            from orbit.core.flow.calls import check_call

            check_call(f"step {self.label!r}", self.key, self.priority)

    def compensation(self, output: Any) -> Step:
        """The compensating step for this step's `output`."""
        spec = self.compensate(output) if callable(self.compensate) else self.compensate
        return as_step(spec)

    @property
    def label(self) -> str:
        return self.name or self.task

    def command(self, unit: str, input: Any = None, on_exhausted: str | None = None) -> StepCommand:
        return StepCommand(
            unit=unit, task=self.task, queue="" if self.inline else self.queue or default_queue(self.task),
            input=as_json(self.input if input is None else input, f"the input of step {unit!r}", "input"),
            kind="task",
            retry=retry_policy(self.retry),
            timeout_ms=optional_ms(self.timeout, f"step {self.task!r} timeout"),
            queue_timeout_ms=optional_ms(self.queue_timeout, f"step {self.task!r} queue_timeout"),
            heartbeat_timeout_ms=optional_ms(self.heartbeat_timeout, f"step {self.task!r} heartbeat_timeout"),
            on_exhausted=on_exhausted or self.on_exhausted, compensable=self.compensate is not None,
            inline=self.inline, on_missing_worker="fail" if self.on_missing_worker == "fail" else None,
            flow_key=self.key, priority=self.priority)


def as_step(spec: Any) -> Step:
    """`Step(...)`, `(task, input)` or `(task, input, {options})` -> Step."""
    if isinstance(spec, Step):
        return spec
    if isinstance(spec, tuple) and 1 <= len(spec) <= 3 and isinstance(spec[0], str):
        opts = spec[2] if len(spec) == 3 else {}
        return Step(spec[0], spec[1] if len(spec) > 1 else None, **opts)
    raise TypeError(f"expected orbit.Step(task, input, ...) or a (task, input) tuple, got {spec!r}")
