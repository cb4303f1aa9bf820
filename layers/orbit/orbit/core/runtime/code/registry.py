"""A registered code workflow: `CodeWorkflow` (one build) and its build id. The registry that
holds them, and the process's `REGISTRY`, are process state: `orbit/workflow.py`.

A code workflow is a function `(ctx, input) -> output` that the code runtime
(`orbit.core.runtime.code.replayer`) replays from history on every decision. Each
registration carries a *build id*: the explicit `build=` or a hash of the
function's source. An execution pins the build it started with
(`WorkflowCreated.build`). Several versions, and several builds of one version,
live side by side in one registry; new executions take the most recently
registered build. `@orbit.workflow` (orbit/workflow.py) fills it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

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
    # Flow control (docs/flow-control.md): {concurrency, rate, priority, queues} as given to
    # @orbit.workflow, checked there; keys may be functions of the input.
    flow_args: dict[str, Any] = field(default_factory=dict, compare=False)

    @cached_property
    def flow(self) -> Any:
        from orbit.core.flow.spec import parse_flow

        return parse_flow(self.flow_args, self.tasks, self.flow_args.get("queues"), code=True)[0]

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
