"""Code workflows: the `@orbit.workflow(name, version=...)` decorator.

`CodeRegistry` and the process's `REGISTRY` (process state, so not under core/) live here;
`CodeWorkflow`, one registered build, in core/runtime/code/registry.py.

A code workflow is a function `(ctx, input) -> output` that the code runtime
(`orbit.core.runtime.code.replayer`) replays from history on every decision. Each
registration carries a *build id*: the explicit `build=` or a hash of the
function's source. An execution pins the build it started with
(`WorkflowCreated.build`). A decider that does not hold that build (a deploy
replaced it) replays the history on the build it holds and switches to it only
if every recorded call matches; otherwise the execution parks until compatible
code is back (docs/evolution.md). An explicit `build=` pins exactly. Several
versions, and several builds of one version, live side by side in one registry;
new executions take the most recently registered build.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from orbit.core.runtime.code.registry import CodeWorkflow, WorkflowFunction, source_build_id
from orbit.errors import BuildMismatch, UnknownWorkflow, ValidationError

# `import orbit` imports this module (so `orbit.workflow` is the decorator, not the module);
# heavier imports (inspect, the definition package) wait until a workflow is declared.



class CodeRegistry:
    """Code workflows by name, version and build; safe to use from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # name -> version -> build -> workflow; dicts keep registration order.
        self._by_name: dict[str, dict[str, dict[str, CodeWorkflow]]] = {}
        self._latest_version: dict[str, str] = {}

    def register(self, wf: CodeWorkflow) -> CodeWorkflow:
        """Add a build; registering the same (name, version, build) again replaces it."""
        with self._lock:
            builds = self._by_name.setdefault(wf.name, {}).setdefault(wf.version, {})
            builds.pop(wf.build, None)  # re-insert so it becomes the newest build
            builds[wf.build] = wf
            self._latest_version[wf.name] = wf.version
        return wf

    def get(self, name: str, version: str | None = None, build: str | None = None) -> CodeWorkflow:
        """The workflow to run: the newest build of `version` (default: the newest version).

        With `build`, exactly that build or `BuildMismatch` naming the builds held.
        """
        with self._lock:
            versions = self._by_name.get(name)
            if not versions:
                raise UnknownWorkflow(f"no code workflow named {name!r} is registered")
            ver = version if version is not None else self._latest_version[name]
            builds = versions.get(ver)
            if not builds:
                raise UnknownWorkflow(
                    f"code workflow {name!r} has no version {ver!r} (registered: {sorted(versions)})")
            if build is None:
                return next(reversed(builds.values()))
            found = builds.get(build)
            if found is None:
                raise BuildMismatch(
                    f"workflow {name!r} version {ver!r} is pinned to build {build!r}, which this "
                    f"process does not hold (it holds {list(builds)}); deploy that build to finish it")
            return found

    def replace(self, workflows: Any) -> None:
        """Hold exactly `workflows` from now on (a deployment replaces the code it ships)."""
        with self._lock:
            self._by_name.clear()
            self._latest_version.clear()
        for wf in workflows:
            self.register(wf)

    def find(self, name: str, version: str | None = None, build: str | None = None) -> CodeWorkflow | None:
        """Like `get`, but None when nothing matches."""
        try:
            return self.get(name, version, build)
        except (UnknownWorkflow, BuildMismatch):
            return None

    def names(self) -> list[str]:
        with self._lock:
            return list(self._by_name)

    def all(self) -> list[CodeWorkflow]:
        with self._lock:
            return [wf for versions in self._by_name.values() for builds in versions.values()
                    for wf in builds.values()]

    def unregister(self, name: str, version: str | None = None, build: str | None = None) -> None:
        """Forget a name, a version or one build (tests; a deployment drops old builds)."""
        with self._lock:
            versions = self._by_name.get(name, {})
            if version is None:
                versions.clear()
            elif build is None:
                versions.pop(version, None)
            else:
                versions.get(version, {}).pop(build, None)
                if not versions.get(version, True):
                    versions.pop(version)
            if not versions:
                self._by_name.pop(name, None)
                self._latest_version.pop(name, None)
            elif self._latest_version.get(name) not in versions:
                self._latest_version[name] = next(reversed(versions))


REGISTRY = CodeRegistry()
"""The process-wide registry that `@orbit.workflow` fills and the engine reads."""


def workflow(name: str, version: str = "1", build: str | None = None,
             timeout: str | int | None = None, signals: dict[str, Any] | None = None,
             registry: CodeRegistry | None = None,
             retention: str | int | None = None,
             tasks: dict[str, Any] | None = None,
             on_workflow_error: str = "park",
             concurrency: Any = None, rate: dict[str, Any] | None = None, priority: Any = None,
             queues: dict[str, Any] | None = None,
             triggers: dict[str, Any] | None = None) -> Callable[[WorkflowFunction], CodeWorkflow]:
    """Register `fn(ctx, input) -> output` as build `build` (default: source hash) of `name`/`version`.

    `timeout` bounds the whole execution (`30m`, `7d`, or ms): when it passes,
    `orbit.Cancelled` (its subclass `orbit.WorkflowTimedOut`) is raised at the
    pending durable call and the execution ends TIMED_OUT after any cleanup.
    `retention` (`7d`, `90d`, or ms; 1h..3650d) is how long an ended execution's data is kept
    (docs/operations.md); without it the stack's `RetentionDays` applies.
    `tasks` declares task contracts as a definition's `tasks:` key does: `{TASK: {input, output}}`
    JSON Schemas, checked when a step (or `ctx.run`) of that task is scheduled and when its result
    is recorded; a violation fails the step with `orbit.ContractViolation` (docs/definitions.md).
    `on_workflow_error`: what an unexpected exception in the code (a bug: `KeyError`,
    `AttributeError`...) does: `"park"` (the default) parks the execution, traceback in describe,
    until a deploy whose replay gets past it carries it on; `"fail"` fails it with WORKFLOW_ERROR.
    A `TaskError` (`orbit.ApplicationError`) raised on purpose always fails it (docs/evolution.md).
    Flow control (docs/flow-control.md): `concurrency={"limit": 1, "key": lambda input: ...}` caps
    running executions per key, `rate={"limit": 10, "period": "1s"}` caps starts, `priority` (1..5
    or a function of the input) orders waiting starts; `tasks={"T": {"concurrency": ..., "rate": ...,
    "priority": ...}}` does the same for attempts of task T, and `queues={"Q": {"concurrency": N}}`.
    `triggers`: what starts executions from events, as a definition's `triggers:` key (docs/triggers.md).
    """
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("workflow name must be a non-empty string", "workflow.name")
    if not isinstance(version, str) or not version.strip():
        raise ValidationError("workflow version must be a non-empty string", "workflow.version")
    if build is not None and (not isinstance(build, str) or not build.strip()):
        raise ValidationError("build must be a non-empty string when given", "workflow.build")
    import inspect

    from orbit.core.definition.durations import parse_duration
    try:
        timeout_ms = None if timeout is None else parse_duration(timeout)
    except ValueError as e:
        raise ValidationError(str(e), "workflow.timeout") from None
    retention_ms = _retention_ms(retention)

    _check_signal_schemas(signals or {})
    _check_task_contracts(tasks)
    flow_args = _flow_args(concurrency, rate, priority, queues, tasks)
    _check_triggers(triggers, signals)
    from orbit.core.runtime.code.errors import ON_WORKFLOW_ERROR, guarded

    if on_workflow_error not in ON_WORKFLOW_ERROR:
        raise ValidationError(f"on_workflow_error must be 'park' or 'fail', not {on_workflow_error!r}",
                              "workflow.on_workflow_error")

    def register(fn: WorkflowFunction) -> CodeWorkflow:
        if not callable(fn) or len(inspect.signature(fn).parameters) != 2:
            raise ValidationError(f"@workflow({name!r}) needs a function of (ctx, input)", "workflow")
        wf = CodeWorkflow(name, version, build or source_build_id(fn), guarded(fn), timeout_ms,
                          dict(signals or {}), retention_ms, dict(tasks or {}), on_workflow_error,
                          dict(triggers or {}), flow_args)
        return (registry or REGISTRY).register(wf)

    return register


def _flow_args(concurrency: Any, rate: Any, priority: Any, queues: Any, tasks: Any) -> dict[str, Any]:
    """The flow-control arguments, checked as a definition's keys are (paths start `workflow.`)."""
    from orbit.core.flow.spec import parse_flow
    from orbit.errors import Problem

    args = {k: v for k, v in (("concurrency", concurrency), ("rate", rate), ("priority", priority),
                              ("queues", queues)) if v is not None}
    problems = parse_flow(args, tasks, queues, code=True)[1]
    if problems:
        raise ValidationError([Problem(f"workflow.{p.path}", p.message) for p in problems])
    return args


def _retention_ms(retention: str | int | None) -> int | None:
    from orbit.core.definition.durations import parse_duration
    from orbit.core.definition.retention import retention_problem

    if retention is None:
        return None
    try:
        ms = parse_duration(retention)
    except ValueError as e:
        raise ValidationError(str(e), "workflow.retention") from None
    problem = retention_problem(ms)
    if problem:
        raise ValidationError(f"retention {retention!r} {problem}", "workflow.retention")
    return ms


def _check_signal_schemas(signals: dict[str, Any]) -> None:
    """Signal schemas are checked like a definition's: valid, and with local `$ref`s only."""
    from orbit.core.definition.contracts import validate_schema
    from orbit.errors import Problem

    problems = []
    for name, spec in signals.items():
        schema = spec["schema"] if isinstance(spec, dict) and "schema" in spec else spec
        if schema is not None:
            problems += [Problem(f"workflow.signals.{name}", f"invalid JSON Schema: {message}")
                         for message in validate_schema(schema)]
    if problems:
        raise ValidationError(problems)


def _check_triggers(triggers: dict[str, Any] | None, signals: dict[str, Any] | None) -> None:
    from orbit.core.definition.checks import Problems
    from orbit.core.definition.triggers import check_triggers

    if triggers is None:
        return
    out = Problems()
    check_triggers(triggers, "workflow.triggers", out, set(signals) if signals else set())
    if out.items:
        raise ValidationError(out.items)


def _check_task_contracts(tasks: dict[str, Any] | None) -> None:
    from orbit.core.definition.checks import Problems
    from orbit.core.definition.task_contracts import check_contract

    if tasks is None:
        return
    if not isinstance(tasks, dict):
        raise ValidationError("tasks must be a dict of task names to {'input': schema, 'output': schema}",
                              "workflow.tasks")
    out = Problems()
    for name, body in tasks.items():
        check_contract(str(name), body, f"workflow.tasks.{name}", out)
    if out.items:
        raise ValidationError(out.items)


__all__ = ["REGISTRY", "CodeRegistry", "CodeWorkflow", "WorkflowFunction", "source_build_id", "workflow"]
