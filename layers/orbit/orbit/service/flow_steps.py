"""Flow control in the decision pipeline: `Flow`, a collaborator `Engine` composes when it has a
`FlowGate` (`Engine.flow`; docs/flow-control.md). It takes the gate and the ports and callables it
uses, never the engine:

- stage 0, before a start is decided: `admit` passes it through its workflow's gate
  (concurrency per key, then rate); one that must wait is not decided (nothing is committed);
  its come-back message (`come_back`) lets it in later;
- stage 5, after a commit: `release_ended` gives back the slots of the holders the commit ended
  (before the effects, so a retry in the same commit finds its slot free), and `dispatch` (called by
  `Effects`) sends each gated `DispatchTask` through its task's and queue's gate instead of to SQS;
- `Recovery` asks `hold_for_redrive` for the slot of an execution it brings back.

Both are derived from the commit (orbit.core.flow.gates), never from a cached state's guess: a
redelivered message re-derives them, and the stores make them idempotent by holder id. A workflow
without flow keys pays nothing: no gate is built, no request is made (benchmarks/bench_flow.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from orbit.core.flow.gates import attempt_gate, released, start_gate, start_holder
from orbit.core.flow.spec import NO_FLOW, FlowSpec, flow_of
from orbit.core.history.effects import DispatchTask
from orbit.core.history.messages import Message, StartMessage
from orbit.core.history.state import TERMINAL_WORKFLOW, ExecutionState
from orbit.errors import NotFound, OrbitError
from orbit.service.ports import Clock

log = logging.getLogger("orbit.flow")


def registry_limits(registry: Any, now_ms: int) -> Any:
    """The registry's shared task and queue limits in force at `now_ms` (None: it keeps none)."""
    read = getattr(registry, "task_limits", None)
    return read(now_ms) if read is not None else None


class Flow:
    """Flow control for one engine: `gate` (a service.limits.FlowGate); `get_workflow(name, version)`
    (the registry's), `workflow_for(state)` (the workflow an execution is decided with),
    `cached_state` / `load_state` (the engine's)."""

    def __init__(self, gate: Any, clock: Clock, get_workflow: Callable[[str, str | None], Any],
                 workflow_for: Callable[[ExecutionState], Any],
                 cached_state: Callable[[str], ExecutionState | None],
                 load_state: Callable[[str], ExecutionState],
                 shared: Callable[[int], Any] | None = None,
                 stored_after: Callable[[str, int | None], ExecutionState | None] | None = None) -> None:
        self.gate, self.clock, self.get_workflow, self.workflow_for = gate, clock, get_workflow, workflow_for
        self.cached_state, self.load_state = cached_state, load_state
        # The engine's `stored_after`: the stored state if a commit after a seq exists, past every
        # cache. A re-sent dispatch's slot is kept only if no newer commit ended its attempt.
        self.stored_after = stored_after
        # The deployment's shared task and queue limits (the registry's `task_limits(now_ms)`: a
        # snapshot object, the same one while nothing changed; core/flow/shared.py).
        self.shared = shared
        self._shared: tuple[Any, FlowSpec] | None = None
        self._merged: dict[tuple[int, int], tuple[FlowSpec, FlowSpec]] = {}

    @staticmethod
    def spec(workflow: Any) -> FlowSpec:
        return flow_of(workflow) if workflow is not None else NO_FLOW

    def spec_of(self, state: ExecutionState | None) -> FlowSpec:
        if state is None or not state.workflow:
            return self.with_shared(NO_FLOW)
        try:
            wf = self.workflow_for(state)
        except OrbitError:
            return self.with_shared(NO_FLOW)
        return self.with_shared(self.spec(wf))

    def with_shared(self, own: FlowSpec) -> FlowSpec:
        """`own` with the shared task and queue limits in force now (no request while the registry's
        snapshot is cached; nothing to merge when there is none)."""
        if self.shared is None:
            return own
        entries = self.shared(self.clock.now_ms())
        if not entries:
            return own
        from orbit.core.flow.shared import effective, shared_spec

        if self._shared is None or self._shared[0] is not entries:
            self._shared, self._merged = (entries, shared_spec(entries)), {}
        key = (id(own), id(self._shared[1]))
        hit = self._merged.get(key)
        if hit is None or hit[0] is not own:
            if len(self._merged) > 512:
                self._merged.clear()
            hit = self._merged[key] = (own, effective(own, self._shared[1]))
        return hit[1]

    def come_back(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        """A `FLOW_KEY` message (service/limits.py): the start it lets in, or None."""
        back: dict[str, Any] | None = self.gate.come_back(raw)
        return back

    def admit(self, eid: str, msgs: list[Message]) -> list[Message]:
        """The messages to decide now: a start whose workflow's gate holds it back is left out."""
        if not any(isinstance(m, StartMessage) for m in msgs):
            return msgs
        out: list[Message] = []
        for m in msgs:
            if isinstance(m, StartMessage):
                try:
                    wf = self.get_workflow(m.workflow, m.version)
                except OrbitError:
                    out.append(m)  # decided as before: the decision reports the unknown workflow
                    continue
                gate = start_gate(self.spec(wf), m.workflow, eid, m.input, m.priority)
                admitted = self.gate.admit_start(gate, m.to_dict()) if gate is not None else True
                if isinstance(admitted, str):  # its rate drops it, unless it is a start again
                    if not self.exists(eid):
                        self.gate.drop_start(gate, admitted)
                        continue
                elif not admitted:
                    continue
            out.append(m)
        return out

    def exists(self, eid: str) -> bool:
        """Was the execution created (one read; only when a rate would drop its start)?"""
        if self.cached_state(eid) is not None:
            return True
        try:
            self.load_state(eid)
        except NotFound:
            return False
        return True

    def after_start(self, eid: str, msgs: list[Message]) -> None:
        """A start of an execution that had ended already (the same id again) took a slot its
        decision will never give back: give it back."""
        if not any(isinstance(m, StartMessage) for m in msgs):
            return
        state = self.cached_state(eid)
        if state is None or state.status not in TERMINAL_WORKFLOW:
            return
        gate = start_gate(self.spec_of(state), state.workflow, eid, state.input)
        if gate is not None and gate.slots and gate.holder == start_holder(eid):
            self.gate.release(gate)

    def release_ended(self, state: ExecutionState, events: list[Any], workflow: Any,
                      resent: list[list[Any]]) -> None:
        """The slots of the holders a commit ended (`events`, decided with `workflow`) go back, then
        those of the redelivered commits found again (`resent`: their events; a no-op if given back)."""
        self.release(state, events, workflow)
        for again in resent:
            self.release(state, again, None, recovering=True)

    def release(self, state: ExecutionState, events: list[Any], workflow: Any = None,
                recovering: bool = False) -> None:
        if not events:
            return
        spec = self.with_shared(self.spec(workflow)) if workflow is not None else self.spec_of(state)
        for gate in released(spec, state, events):
            self.gate.release(gate, recovering)

    def dispatch(self, e: DispatchTask, body: dict[str, Any], seq: int | None = None) -> bool:
        """True: flow control took the dispatch (sent, held back or in line); False: send it.

        A re-sent dispatch (`resent`: recovery carries out a commit's effects again, derived from
        the state as of `seq`) may come after its attempt ended: another decider recorded the result
        and gave the slot back while this one held an older state (chaos seed 534). Its slot is
        taken first, then the head is checked: if a newer commit ended the attempt, the slot goes
        back at once (a release after the take: any commit before the take is seen by the check).
        A first dispatch cannot meet that: no copy of the attempt ran before it was sent."""
        if e.inline is not None:
            return False
        spec = self.spec_of(self.cached_state(e.execution_id))
        if spec.empty:
            return False
        gate = attempt_gate(spec, e.execution_id, e.unit, e.attempt, e.task, e.queue, e.input,
                            e.flow_key, e.priority)
        if gate is None:
            return False
        self.gate.dispatch(gate, e.queue, body)
        if body.get("resent") and self.overtaken(e, seq):
            log.info("a re-sent dispatch of %s/%s attempt %d came after the attempt ended: its slot "
                     "goes back", e.execution_id, e.unit, e.attempt)
            self.gate.release(gate)
        return True

    def overtaken(self, e: DispatchTask, seq: int | None) -> bool:
        """Has a commit after `seq` ended `e`'s attempt? One consistent head read; the stored state
        only when the head moved (or `seq` is unknown)."""
        if self.stored_after is None:
            return False
        try:
            state = self.stored_after(e.execution_id, seq)
        except NotFound:
            return True
        return state is not None and not state.waits_for(e.unit, e.attempt)

    def hold_for_redrive(self, state: ExecutionState) -> Any:
        """A redriven execution runs again: it takes its slot back first, or the redrive is refused
        (one line naming the limit) while the limit is full. Returns the gate to give back if the
        redrive does not happen (`give_back`), None when its workflow has no concurrency limit."""
        from orbit.errors import RedriveRefused

        gate = start_gate(self.spec_of(state), state.workflow, state.id, state.input)
        if gate is None or not gate.slots:
            return None
        self._take_all(gate, lambda slot: RedriveRefused(
            state.id, f"limit {slot.name!r} key {slot.key!r} has {slot.limit} of {slot.limit} running; "
                      "redrive it when one ends"))
        return gate

    def _take_all(self, gate: Any, refused: Callable[[Any], Exception]) -> int:
        """Take every slot of `gate` now, or none: at the first full one, what was taken goes back and
        `refused(slot)` is raised. Returns the time it was taken at."""
        now = self.clock.now_ms()
        for i, slot in enumerate(gate.slots):
            if not self.gate.store.acquire(slot, gate.holder, now):
                for taken in gate.slots[:i]:
                    self.gate.store.release(taken, gate.holder)
                raise refused(slot)
        return now

    def give_back(self, gate: Any) -> None:
        self.gate.release(gate)

    def hold_for_signal_start(self, workflow: Any, execution_id: str, input: Any) -> Any:
        """A signal-with-start that creates `execution_id` cannot wait in line (its signal would
        have nowhere to go): it takes its slots and a token that exists now, or it is refused
        (LimitFull, one line naming the limit and key) and takes nothing. Returns the gate to give
        back if the start does not happen (`give_back`), None when the workflow has no start limit."""
        from dataclasses import replace

        from orbit.errors import LimitFull

        gate = start_gate(self.spec(workflow), str(workflow.name), execution_id, input)
        if gate is None:
            return None
        now = self._take_all(gate, lambda slot: LimitFull(
            f"execution {execution_id!r}: limit {slot.name!r} key {slot.key!r} has {slot.limit} of "
            f"{slot.limit} running; signal-with-start was refused, nothing was recorded: send it again "
            "when one ends"))
        b = gate.bucket
        if b is not None and self.gate.store.reserve(replace(b, on_exceed="drop"), now) is None:
            self.give_back(gate)
            raise LimitFull(f"execution {execution_id!r}: rate limit {b.name!r} key {b.key!r} allows "
                            f"{b.rate} per {b.period_ms} ms and none is left now; signal-with-start was "
                            "refused, nothing was recorded: send it again later")
        return gate

    # ------------------------------------------------------------------ what users see
    def describe(self, execution_id: str, described: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """`described()` (the describe shape, service/operations.py) and `flow`: where each queued
        step waits (service/limits_view.py); a start still in line describes as WAITING, a dropped
        one as DROPPED."""
        from orbit.service.limits_view import waiting_line, waiting_start, waiting_steps

        try:
            desc = described()
        except NotFound:
            shown = waiting_start(self.gate.store, execution_id)
            if shown is None:
                raise
            return shown
        if desc.get("status") in TERMINAL_WORKFLOW:
            return desc
        state = self.cached_state(execution_id) or self.load_state(execution_id)
        waits = waiting_steps(self.gate.store, self.spec_of(state), state)
        if waits:
            desc["flow"] = waits
            for unit, info in waits.items():
                if unit in (desc.get("steps") or {}):
                    desc["steps"][unit]["waiting"] = waiting_line(info)
        return desc

    def limits(self) -> dict[str, Any]:
        """Every limit with its use now (`orbit limits`, GET /limits)."""
        from orbit.service.limits_view import limits_report

        report: dict[str, Any] = limits_report(self.gate.store)
        entries = self.shared(self.clock.now_ms()) if self.shared is not None else None
        # the deployment's task and queue limits in force, and which registration declared them
        report["shared"] = [{"limit": name, **{k: e[k] for k in ("concurrency", "rate", "priority", "from")
                                               if k in e}}
                            for name, e in sorted((entries or {}).items())]
        return report
