"""The code-workflow registry: `CodeWorkflow` (one registered build), `CodeRegistry`,
the process-wide `REGISTRY`.

A code workflow is a function `(ctx, input) -> output` that the code runtime
(`orbit.core.runtime.code`) replays from history on every decision. Each
registration carries a *build id*: the explicit `build=` or a hash of the
function's source. An execution pins the build it started with
(`WorkflowCreated.build`). Several versions, and several builds of one version,
live side by side in one registry; new executions take the most recently
registered build. `@orbit.workflow` (orbit/workflow.py) fills it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from orbit.errors import BuildMismatch, UnknownWorkflow

WorkflowFunction = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class CodeWorkflow:
    """One registered build of a code workflow (what the decider dispatches on)."""

    name: str
    version: str
    build: str
    fn: WorkflowFunction = field(repr=False, compare=False)
    timeout_ms: int | None = None
    # Payload schemas per signal name (JSON Schema), checked at the API like a definition's.
    signals: dict[str, Any] = field(default_factory=dict, compare=False)
    retention_ms: int | None = None  # how long an ended execution's data is kept; None: the stack's
    # Task contracts `{TASK: {input, output}}` (JSON Schemas), checked by the decider as a definition's
    tasks: dict[str, Any] = field(default_factory=dict, compare=False)
    # An unexpected exception in the code (a bug): "park" the execution until a fixed build is
    # deployed, or "fail" it with WORKFLOW_ERROR (decider/parking.py `bugs_park`).
    on_workflow_error: str = field(default="park", compare=False)
    # `@orbit.workflow(triggers=...)`: a definition's `triggers:` block (docs/triggers.md)
    triggers: dict[str, Any] = field(default_factory=dict, compare=False)

    @cached_property
    def task_contracts(self) -> Any:
        from orbit.core.definition.model import compiled_contracts

        return compiled_contracts(self.tasks)

    @property
    def kind(self) -> str:
        return "code"

    @property
    def cleanup_on_abort(self) -> bool:
        """Tells the engine that a (non-forced) cancel or timeout is raised inside the code,
        which runs its own cleanup steps before the execution ends."""
        return True

    @property
    def definition_hash(self) -> str:
        """What `WorkflowCreated.definition_hash` records: for code, the build id."""
        return self.build

    def __call__(self, ctx: Any, input: Any) -> Any:
        return self.fn(ctx, input)


def source_build_id(fn: WorkflowFunction) -> str:
    """`src:` + 16 hex digits of SHA-256 over the function's source text.

    The source (not the bytecode) is hashed so the id is stable across Python
    patch releases; a function without retrievable source (built with `exec`)
    falls back to its bytecode and constants.
    """
    import hashlib
    import inspect
    import textwrap

    try:
        text = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        code = fn.__code__
        text = repr((code.co_code, code.co_consts, code.co_names, code.co_varnames))
    return "src:" + hashlib.sha256(text.encode()).hexdigest()[:16]


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
