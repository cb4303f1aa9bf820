"""`ctx`: what a code workflow can do. Every method is a durable call or derived from history.

Workflow code must be deterministic: given the same results it must make the
same calls in the same order. Use `ctx.now()`, `ctx.random()` and
`ctx.uuid()` instead of the clock, `random` and `uuid` modules; do I/O only
in steps.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from orbit.core.definition.durations import parse_duration
from orbit.core.runtime import commands as C
from orbit.core.runtime.code.errors import ContinuedAsNew
from orbit.core.runtime.code.replay import Replay
from orbit.core.runtime.code.specs import Step, as_json, as_step, optional_ms


def _epoch_ms(when: Any) -> int:
    if isinstance(when, datetime):
        if when.tzinfo is None:
            raise TypeError("wait_until needs a timezone-aware datetime (e.g. datetime(..., tzinfo=UTC))")
        return int(when.timestamp() * 1000)
    if isinstance(when, int) and not isinstance(when, bool):
        return when
    if isinstance(when, str):
        return _epoch_ms(datetime.fromisoformat(when.replace("Z", "+00:00")))
    raise TypeError(f"wait_until takes an aware datetime, an ISO 8601 string or epoch ms, got {when!r}")


class WorkflowContext:
    """Passed as `ctx` to `@orbit.workflow` functions."""

    def __init__(self, replay: Replay, workflow: Any) -> None:
        self._replay = replay
        self.workflow = workflow

    @property
    def execution_id(self) -> str:
        return self._replay.execution_id

    # -- queries -----------------------------------------------------------------------------
    def query_handler(self, name: str, fn: Any) -> None:
        """Answer query `name` with `fn(input)`: it runs after replay, reading the function's local
        variables as they stand, and may not call a durable operation (orbit/service/queries.py)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a query name is a non-empty string, not {name!r}")
        if not callable(fn):
            raise TypeError(f"query {name!r}: the handler must be callable, not {fn!r}")
        self.__dict__.setdefault("query_handlers", {})[name] = fn

    # -- updates (orbit/core/runtime/code/updates.py) --------------------------------------------
    def update_handler(self, name: str, fn: Any, validator: Any = None) -> None:
        """Handle update `name` with `fn(input)` (its return value is the update's result);
        `validator(input)` raising refuses the update before anything is recorded. The handler
        runs while the workflow waits on a durable call and may change its local variables; it
        may not call a durable operation (docs/updates.md)."""
        self._replay.updates.register(self, name, fn, validator)

    # -- steps -------------------------------------------------------------------------------
    def step(self, task: str, input: Any = None, *, name: str | None = None, retry: Any = None,
             timeout: Any = None, queue_timeout: Any = None, on_exhausted: str = C.FAIL_RUN,
             queue: str | None = None, compensate: Any = None, heartbeat_timeout: Any = None,
             on_missing_worker: str | None = None, key: str | None = None,
             priority: int | None = None) -> Any:
        """Run `task` on a worker and return its output.

        `retry` uses the definition format (`{"max_attempts": 3, "backoff": "1s", "multiplier": 2,
        "max_backoff": "1m", "jitter": "full", "non_retryable": ["CARD_DECLINED"]}`). When every
        attempt failed: `on_exhausted="fail_run"` fails the execution; `"continue_workflow"` raises
        `orbit.StepFailed` here (`.code` tells errors apart).

        `compensate` (an `orbit.Step`, a `(task, input)` tuple, or a function of this step's
        output returning one) is run by the engine if the execution later fails, is cancelled
        or times out, for succeeded steps in reverse order of success, like a definition's.

        `heartbeat_timeout` (e.g. `"30s"`): once a worker reports `started`, the attempt fails
        with HEARTBEAT_TIMEOUT (retryable) if the task's code does not call `ctx.heartbeat`
        within that period, each time; the attempt's `timeout` still applies.

        `on_missing_worker="fail"`: a worker with no function for `task` fails the attempt at once
        (UNKNOWN_TASK) instead of leaving it in its queue until a worker serves it (the default).

        `key` (a string of 1..128 characters): the key this call counts under on its task's limits,
        instead of the limit's key expression; `priority` (1 highest .. 5) orders it in their
        lines (docs/flow-control.md). Both are recorded with the step and compared on replay.
        """
        return self._replay.step(Step(task, input, name, queue, retry, timeout, queue_timeout, on_exhausted,
                                      compensate, heartbeat_timeout, on_missing_worker=on_missing_worker,
                                      key=key, priority=priority))

    def run(self, fn: Any, *args: Any, name: str | None = None, retry: Any = None, timeout: Any = None,
            semantics: str = "at_least_once", on_exhausted: str = C.FAIL_RUN) -> Any:
        """Run `fn(*args)` inside the decider's invocation (an inline step: no queue) and return
        its result, recorded like a step's. `semantics`: "at_least_once" (default) or
        "at_most_once". See docs/inline-steps.md."""
        from orbit.core.runtime.code.inline import run_inline  # issue 15: its own module

        return run_inline(self._replay, fn, args, name, retry, timeout, semantics, on_exhausted)

    def parallel(self, *steps: Any, return_exceptions: bool = False, **policy: Any) -> list[Any]:
        """Run several steps, or branches, at once; return their outputs in order.

        Each argument is `orbit.Step(task, input, ...)` or `(task, input)`. When a
        `continue_workflow` step fails, its `StepFailed` is raised after all ended,
        or put in its place with `return_exceptions=True`.

        A branch is a function `fn(ctx)` with its own ctx (every durable call, nested groups
        included); completion policies `min_successful`, `tolerated_failures`,
        `tolerated_failure_percentage`, `fail_fast` (docs/branches.md).
        """
        if len(steps) == 1 and isinstance(steps[0], list):
            steps = tuple(steps[0])
        if policy or any(callable(s) for s in steps):
            from orbit.core.runtime.code.branch_calls import parallel
            return parallel(self, steps, return_exceptions, **policy)
        if not steps:
            return []
        return self._replay.parallel([as_step(s) for s in steps], return_exceptions)

    def map(self, task: Any, items: Any, *, concurrency: int | None = None,
            tolerated_failures: int | None = None, name: str | None = None, retry: Any = None,
            timeout: Any = None, queue_timeout: Any = None, on_exhausted: str = C.FAIL_RUN,
            queue: str | None = None, heartbeat_timeout: Any = None, key: str | None = None,
            priority: int | None = None, **policy: Any) -> list[Any]:
        """Run `task` once per item (the item is the input), at most `concurrency` at a time.

        Returns outputs in item order; an element that failed within `tolerated_failures`
        reads as None. Beyond that the map fails as one step (see `on_exhausted`).

        `ctx.map(items, fn, ...)` runs a branch `fn(ctx, item)` or `fn(ctx, item, index)` per
        item instead, with the completion policies of `parallel` (docs/branches.md).
        """
        if not isinstance(task, str):
            from orbit.core.runtime.code.branch_calls import map_branches
            return map_branches(self, task, items, concurrency,
                                tolerated_failures=tolerated_failures, **policy)
        if policy:
            raise TypeError(f"map of task {task!r}: unknown options {sorted(policy)}")
        tolerated_failures = 0 if tolerated_failures is None else tolerated_failures
        if concurrency is not None and (not isinstance(concurrency, int) or concurrency < 1):
            raise TypeError(f"map concurrency must be a positive int, got {concurrency!r}")
        if not isinstance(tolerated_failures, int) or tolerated_failures < 0:
            raise TypeError(f"map tolerated_failures must be an int >= 0, got {tolerated_failures!r}")
        spec = Step(task, None, name, queue, retry, timeout, queue_timeout, on_exhausted,
                    heartbeat_timeout=heartbeat_timeout, key=key, priority=priority)
        return self._replay.map(spec, list(items), concurrency, tolerated_failures)

    def race(self, **branches: Any) -> tuple[str, Any]:
        """Run branches (functions of ctx, or steps) at once; the first to end wins: return
        `(name, result)` and cancel the others (docs/branches.md)."""
        from orbit.core.runtime.code.branch_calls import race
        return race(self, branches)

    def children(self, children: Any, **policy: Any) -> list[Any]:
        """Start several children at once and wait for them (a group: outputs in order, the
        completion policies of `parallel`). Each is `(workflow, input)` or a dict with
        `workflow`, `input`, `version`, `parent_policy` (docs/branches.md)."""
        from orbit.core.runtime.code.branch_calls import children as _children
        return _children(self, children, **policy)

    def wait_for_condition(self, check: Any, initial_state: Any = None, **strategy: Any) -> Any:
        """Poll `check(ctx, state)` (or a task name) with durable waits until `until(state)` holds;
        `delay`, `backoff`, `max_delay`, `max_attempts`; raises `ConditionNotMet` when out of
        attempts (docs/branches.md)."""
        from orbit.core.runtime.code.condition import wait_for_condition
        return wait_for_condition(self, check, initial_state, **strategy)

    def scope(self, shield: bool = False) -> Any:
        """`with ctx.scope() as s:` ... `s.cancel()` stops what was started in it; with
        `shield=True` a cancel of the workflow waits for the scope to end (docs/branches.md)."""
        from orbit.core.runtime.code.scope import Scope
        return Scope(self._replay, shield)

    # -- time ----------------------------------------------------------------------------------
    def sleep(self, duration: str | int) -> None:
        """A durable timer: `"10m"`, `"7d"`, ISO 8601, or milliseconds."""
        ms = parse_duration(duration)
        self._replay.await_unit("sleep", "sleep()", lambda key: C.WaitUntil(key, self._replay.now_ms + ms),
                                fail_run=True)

    def wait_until(self, when: Any) -> None:
        """Sleep until an aware datetime, an ISO 8601 time or epoch ms (a past time fires at once)."""
        at = _epoch_ms(when)
        self._replay.await_unit("sleep", "sleep()", lambda key: C.WaitUntil(key, at), fail_run=True)

    def now(self) -> datetime:
        """The decision time as recorded in history (UTC); the same on every replay."""
        return datetime.fromtimestamp(self._replay.now_ms / 1000, tz=UTC)

    def now_ms(self) -> int:
        return self._replay.now_ms

    # -- signals, hooks, children ------------------------------------------------------------
    def wait_for(self, name: str, timeout: str | int | None = None) -> Any:
        """Wait for signal `name` (or a resume of its hook); return the payload.

        A signal sent before the wait is buffered and taken here. When `timeout`
        passes first, `orbit.StepFailed` with code `TIMEOUT` is raised.
        """
        if not isinstance(name, str) or not name:
            raise TypeError(f"wait_for needs a signal name, got {name!r}")
        timeout_ms = optional_ms(timeout, f"wait_for({name!r}) timeout")
        def command(key: str) -> C.Command:
            return C.WaitForSignal(key, name, timeout_ms, C.CONTINUE_WORKFLOW)
        return self._replay.await_unit("wait_for", f"wait_for({name})", command, fail_run=False, signal=name)

    def hook_token(self, name: str, metadata: Any = None) -> str:
        """The token that resumes `wait_for(name)` through the hook API; known before the wait.
        `metadata` (JSON: who may answer, a link, ...) is kept with the hook and shown by describe."""
        return self._replay.hook_token(name, as_json(metadata, f"the metadata of hook {name!r}", "metadata"))

    def dispose_hook(self, name: str) -> None:
        """Be done with hook `name`: its token resumes nothing any more (the API answers 404)."""
        from orbit.core.runtime.code.hooks import dispose
        dispose(self._replay, name)

    def child(self, workflow: str, input: Any = None, *, version: str | None = None,
              on_exhausted: str = C.FAIL_RUN, parent_policy: str = "cancel") -> Any:
        """Run a child execution (deterministic id, cancelled with this one); return its output.

        A child that fails fails this execution, or with `on_exhausted="continue_workflow"`
        raises `orbit.StepFailed` here. `parent_policy="abandon"`: when this execution is
        cancelled (or stops waiting for it) the child runs on; its unit key says so.
        """
        if parent_policy not in ("cancel", "abandon"):
            raise TypeError(f"parent_policy must be 'cancel' or 'abandon', got {parent_policy!r}")
        if on_exhausted not in (C.FAIL_RUN, C.CONTINUE_WORKFLOW):
            raise TypeError(f"on_exhausted must be 'fail_run' or 'continue_workflow', got {on_exhausted!r}")
        if not isinstance(workflow, str) or not workflow:
            raise TypeError(f"child needs a workflow name, got {workflow!r}")
        def command(key: str) -> C.Command:
            return C.LinkChild(key, f"{self.execution_id}/{key}", workflow, version,
                               as_json(input, f"the input of child {key!r}", "input"), on_exhausted)
        label = f"child({workflow})" if parent_policy == "cancel" else f"child({workflow}, abandon)"
        return self._replay.await_unit("workflow", label, command,
                                       fail_run=on_exhausted == C.FAIL_RUN, workflow=workflow)

    # -- changing code that runs ------------------------------------------------------------
    def patched(self, change_id: str) -> bool:
        """Branch for a change to code that executions already run (see docs/evolution.md).

        True in a run that reaches this point on code that has the change (a marker is recorded,
        so it stays True on every replay); False when replaying a run that went past this point
        on the old code (no marker). `if ctx.patched("x"): new() else: old()`.
        """
        if not isinstance(change_id, str) or not change_id:
            raise TypeError(f"patched needs a change id (non-empty string), got {change_id!r}")
        return self._replay.patched(change_id)

    def deprecate_patch(self, change_id: str) -> None:
        """The clean-up deploy of a patch, once no run that took the old path is left: the code
        keeps only the new path. A run still on the old path parks here instead of going on
        with code it never ran; new runs record the marker, so code with `patched` still agrees.
        """
        if not isinstance(change_id, str) or not change_id:
            raise TypeError(f"deprecate_patch needs a change id (non-empty string), got {change_id!r}")
        self._replay.patched(change_id, deprecated=True)

    # -- recorded, not waited for --------------------------------------------------------------
    def progress(self, data: Any) -> None:
        """Record progress (shown by describe); recorded once, however often the code replays."""
        self._replay.progress(data)

    def set_attributes(self, values: dict[str, Any]) -> None:
        """Set search attributes (`orbit list --where key=value`): at most 10 names, values strings
        (up to 256 characters), numbers or booleans. Recorded once, however often the code replays."""
        from orbit.core.runtime.code.attributes import set_attributes

        set_attributes(self._replay, values)

    def random(self) -> float:
        """A float in [0, 1) that replays to the same value (not for secrets)."""
        return int.from_bytes(self._replay.draw("random")[:8], "big") / 2**64

    def uuid(self) -> str:
        """A version-4-shaped UUID string that replays to the same value (not for secrets)."""
        b = bytearray(self._replay.draw("uuid")[:16])
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        h = b.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def continue_as_new(self, input: Any = None) -> None:
        """End this run and start the workflow again with `input` and an empty history."""
        raise ContinuedAsNew(as_json(input, "the continue_as_new input", "input"))
