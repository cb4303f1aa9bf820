"""Flow control in the decision pipeline (a mixin of `Engine`; docs/flow-control.md).

- stage 0, before a start is decided: `_flow_admit` passes it through its workflow's gate
  (concurrency per key, then rate); one that must wait is not decided (nothing is committed);
- stage 4/5, after a commit: `_flow_release` gives back the slots of the holders the commit ended
  (before the effects, so a retry in the same commit finds its slot free), and `_flow_dispatch`
  sends each gated `DispatchTask` through its task's and queue's gate instead of straight to SQS.

Both are derived from the commit (orbit.core.flow.gates), never from a cached state's guess: a
redelivered message re-derives them, and the stores make them idempotent by holder id. A workflow
without flow keys pays nothing: no gate is built, no request is made (benchmarks/bench_flow.py).
"""

from __future__ import annotations

from typing import Any

from orbit.core.flow.gates import attempt_gate, released, start_gate, start_holder
from orbit.core.flow.spec import NO_FLOW, FlowSpec, flow_of
from orbit.core.history.effects import DispatchTask
from orbit.core.history.messages import Message, StartMessage
from orbit.core.history.state import TERMINAL_WORKFLOW, ExecutionState
from orbit.errors import NotFound, OrbitError


class FlowSteps:
    """Mixin of Engine: `flow` (a service.limits.FlowGate, or None: no flow control), `registry`."""

    flow: Any = None
    registry: Any

    def _flow_spec(self, workflow: Any) -> FlowSpec:
        return flow_of(workflow) if workflow is not None else NO_FLOW

    def _flow_spec_of(self, state: ExecutionState | None) -> FlowSpec:
        if state is None or not state.workflow:
            return NO_FLOW
        try:
            wf = self._workflow_for(state, None)  # type: ignore[attr-defined]
        except OrbitError:
            return NO_FLOW
        return self._flow_spec(wf)

    def _flow_admit(self, eid: str, msgs: list[Message]) -> list[Message]:
        """The messages to decide now: a start whose workflow's gate holds it back is left out."""
        if self.flow is None or not any(isinstance(m, StartMessage) for m in msgs):
            return msgs
        out: list[Message] = []
        for m in msgs:
            if isinstance(m, StartMessage):
                try:
                    wf = self.registry.get(m.workflow, m.version)
                except OrbitError:
                    out.append(m)  # decided as before: the decision reports the unknown workflow
                    continue
                gate = start_gate(self._flow_spec(wf), m.workflow, eid, m.input)
                admitted = self.flow.admit_start(gate, m.to_dict()) if gate is not None else True
                if isinstance(admitted, str):  # its rate drops it, unless it is a start again
                    if not self._exists(eid):
                        self.flow.drop_start(gate, admitted)
                        continue
                elif not admitted:
                    continue
            out.append(m)
        return out

    def _exists(self, eid: str) -> bool:
        """Was the execution created (one read; only when a rate would drop its start)?"""
        if self.cached_state(eid) is not None:  # type: ignore[attr-defined]
            return True
        try:
            self.load_state(eid)  # type: ignore[attr-defined]
        except NotFound:
            return False
        return True

    def _flow_after_start(self, eid: str, msgs: list[Message]) -> None:
        """A start of an execution that had ended already (the same id again) took a slot its
        decision will never give back: give it back."""
        if self.flow is None or not any(isinstance(m, StartMessage) for m in msgs):
            return
        state = self.cached_state(eid)  # type: ignore[attr-defined]
        if state is None or state.status not in TERMINAL_WORKFLOW:
            return
        gate = start_gate(self._flow_spec_of(state), state.workflow, eid, state.input)
        if gate is not None and gate.slots and gate.holder == start_holder(eid):
            self.flow.release(gate)

    def _flow_release(self, state: ExecutionState, events: list[Any], workflow: Any = None,
                      recovering: bool = False) -> None:
        if self.flow is None or not events:
            return
        spec = self._flow_spec(workflow) if workflow is not None else self._flow_spec_of(state)
        for gate in released(spec, state, events):
            self.flow.release(gate, recovering)

    def _flow_dispatch(self, e: DispatchTask, body: dict[str, Any]) -> bool:
        """True: flow control took the dispatch (sent, held back or in line); False: send it."""
        if self.flow is None or e.inline is not None:
            return False
        spec = self._flow_spec_of(self.cached_state(e.execution_id))  # type: ignore[attr-defined]
        if spec.empty:
            return False
        gate = attempt_gate(spec, e.execution_id, e.unit, e.attempt, e.task, e.queue, e.input)
        if gate is None:
            return False
        self.flow.dispatch(gate, e.queue, body)
        return True

    def _flow_hold_for_redrive(self, state: ExecutionState) -> Any:
        """A redriven execution runs again: it takes its slot back first, or the redrive is refused
        (one line naming the limit) while the limit is full. Returns the gate to give back if the
        redrive does not happen, None when its workflow has no concurrency limit."""
        from orbit.errors import RedriveRefused

        gate = start_gate(self._flow_spec_of(state), state.workflow, state.id, state.input)
        if gate is None or not gate.slots:
            return None
        now = self.clock.now_ms()  # type: ignore[attr-defined]
        for i, slot in enumerate(gate.slots):
            if not self.flow.store.acquire(slot, gate.holder, now):
                for taken in gate.slots[:i]:
                    self.flow.store.release(taken, gate.holder)
                raise RedriveRefused(state.id, f"limit {slot.name!r} key {slot.key!r} has {slot.limit} of "
                                               f"{slot.limit} running; redrive it when one ends")
        return gate

    # ------------------------------------------------------------------ what users see
    def describe(self, execution_id: str, steps_after: str | None = None,
                 steps_limit: int | None = None) -> dict[str, Any]:
        """The describe shape (service/operations.py) and, with flow control, `flow`: where each
        queued step waits (service/limits_view.py); a start still in line describes as WAITING,
        a dropped one as DROPPED."""
        from orbit.service.limits_view import waiting_line, waiting_start, waiting_steps

        try:
            desc: dict[str, Any] = super().describe(execution_id, steps_after, steps_limit)  # type: ignore[misc]
        except NotFound:
            shown = waiting_start(self.flow.store, execution_id) if self.flow is not None else None
            if shown is None:
                raise
            return shown
        if self.flow is None or desc.get("status") in TERMINAL_WORKFLOW:
            return desc
        state = self.cached_state(execution_id) or self.load_state(execution_id)  # type: ignore[attr-defined]
        waits = waiting_steps(self.flow.store, self._flow_spec_of(state), state)
        if waits:
            desc["flow"] = waits
            for unit, info in waits.items():
                if unit in (desc.get("steps") or {}):
                    desc["steps"][unit]["waiting"] = waiting_line(info)
        return desc

    def limits(self) -> dict[str, Any]:
        """Every limit with its use now (`orbit limits`, GET /limits)."""
        from orbit.service.limits_view import limits_report

        if self.flow is None:
            return {"limits": [], "rates": []}
        return limits_report(self.flow.store)
