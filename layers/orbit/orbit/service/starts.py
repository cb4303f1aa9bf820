"""Starting an execution (`Starts`, composed by `Engine`), and what a start of an id that exists means.

A start is a message like any other (`StartMessage`, decided by the engine); these are the checks
around it: the caller's id, and a repeated start (same workflow and input: the existing execution;
anything else: `ExecutionExists`, or for a child whose id is taken a failed parent step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orbit.core.flow.calls import priority_problem
from orbit.core.history.effects import Effect, NotifyParent
from orbit.core.history.events import TaskError
from orbit.core.history.messages import Message, StartMessage
from orbit.core.history.state import ExecutionState
from orbit.core.history.storable import execution_id_problem
from orbit.core.tracing import Tracer
from orbit.errors import ExecutionExists, NotFound, ValidationError, WorkflowRetired
from orbit.service.operations import check_json
from orbit.service.ports import IdSource, Registry

# Decide `msgs` of execution `eid` now, in a span of the trace whose header is given (Engine._traced).
Decide = Callable[[str, list[Message], str | None], None]


class Starts:
    """`Engine.start`: the caller's id and workflow checked, then the start decided at once (`decide`);
    `load_state` reads an execution (a retired workflow's repeated start finds it)."""

    def __init__(self, registry: Registry, ids: IdSource, tracer: Tracer, decide: Decide,
                 load_state: Callable[[str], ExecutionState]) -> None:
        self.registry, self.ids, self.tracer = registry, ids, tracer
        self._decide, self._load_state = decide, load_state

    def start(
        self,
        workflow: str,
        version: str | None = None,
        input: Any = None,
        execution_id: str | None = None,
        parent: dict[str, str] | None = None,
        priority: int | None = None,
    ) -> str:
        """Start an execution now and return its id. `priority` (1..5): its place in the lines of its
        workflow's flow limits, instead of the declared priority (docs/flow-control.md).

        Same id and same workflow/input: returns the existing execution.
        Same id, different workflow or input, or another explicit version: ExecutionExists.
        """
        check_json(input, "input")
        if problem := priority_problem(priority):
            raise ValidationError(problem, "priority")
        if execution_id is not None and parent is None:
            problem = execution_id_problem(execution_id)  # the one rule for ids callers choose
            if problem:
                raise ValidationError(problem, "id")
        try:
            wf = self.registry.get(workflow, version)
        except WorkflowRetired:
            if execution_id is not None and self._started_before(execution_id, workflow, version, input):
                return execution_id  # a repeated start (a client's retry) still finds its execution
            raise
        eid = execution_id or f"{wf.name}-{self.ids.token()}"
        # The message carries a version only when the caller chose one: without it, a repeated
        # start returns the existing execution even if a newer version was registered since.
        pinned = None if version is None else str(wf.version)
        msg = StartMessage(eid, f"start:{eid}", wf.name, pinned, input, parent, priority=priority)
        self._decide(eid, [msg], self.tracer.current_header())
        return eid

    def _started_before(self, eid: str, workflow: str, version: str | None, input: Any) -> bool:
        """Was `eid` started with this workflow and input (and version, when given)?"""
        try:
            state = self._load_state(eid)
        except NotFound:
            return False
        return bool(state.created and state.workflow == workflow and state.input == input
                    and (version is None or str(version) == state.version))

    @staticmethod
    def check_same_start(state: ExecutionState, m: StartMessage) -> None:
        """A start of an id that exists: the same workflow and input return it, else it is refused."""
        if m.version is not None and state.workflow == m.workflow and str(m.version) != state.version:
            raise ExecutionExists(
                state.id,
                f"execution {state.id!r} already exists with version {state.version}; "
                f"you asked for version {m.version} ({state.workflow})",
            )
        if state.workflow != m.workflow or state.input != m.input:
            raise ExecutionExists(
                state.id,
                f"execution {state.id!r} already exists "
                f"({state.workflow} v{state.version}) with a different "
                f"{'workflow' if state.workflow != m.workflow else 'input'}",
            )

    @staticmethod
    def not_the_parents(state: ExecutionState, m: StartMessage) -> list[Effect]:
        """A start whose parent link differs from the existing execution's: never adopted.

        Callers cannot choose child ids (`execution_id_problem`), so this only meets an execution
        created before that rule, or a store written by hand. The parent's step fails with
        CHILD_ID_TAKEN instead of waiting for a child that will never report back; a caller's
        start of a child's id is refused (ExecutionExists).
        """
        if not m.parent:
            raise ExecutionExists(state.id, f"execution {state.id!r} is a child of another execution")
        message = (f"execution id {state.id!r} is already taken by an execution that is not this "
                   f"step's child ({'no parent' if not state.parent else 'another parent'})")
        return [NotifyParent(m.parent.get("execution_id", ""), m.parent.get("step", ""), state.id, "FAILED",
                             None, TaskError("CHILD_ID_TAKEN", message, False))]
