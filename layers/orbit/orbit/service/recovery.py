"""Recovery operations of the engine: redrive a failed execution, fork one from a step.

Both decide and commit inline, as a start does (the API answers with the outcome): the
commit is conditional on the next seq, so of two redrives racing on one execution exactly
one is recorded and the other is refused; a retried request (same `request_id`, same fork
id) finds its commit and re-sends that commit's effects, so an API that died between the
commit and its sends loses nothing. See docs/recovery.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orbit.core.decider.recovery import fork_step_problem, fork_units, redrive_refusal
from orbit.core.history.events import ExecutionRedriven, Recorded
from orbit.core.history.messages import Message, RedriveMessage, StartMessage
from orbit.core.history.state import ExecutionState
from orbit.core.history.storable import execution_id_problem, signal_id_problem
from orbit.errors import ExecutionExists, ForkAfterCompensation, NotFound, RedriveRefused, ValidationError
from orbit.service.ports import HistoryStore, IdSource, Registry


class Recovery:
    """`Engine.redrive` and `Engine.fork`. `process` decides and commits messages at once (the
    engine's pipeline without inline work); `cached_state` is the state the engine holds, if any."""

    def __init__(self, store: HistoryStore, registry: Registry, ids: IdSource,
                 load_state: Callable[[str], ExecutionState], process: Callable[[str, list[Message]], None],
                 cached_state: Callable[[str], ExecutionState | None], flow: Any = None) -> None:
        self.store, self.registry, self.ids = store, registry, ids
        self.load_state, self._process, self._cached_state = load_state, process, cached_state
        self.flow = flow  # service.flow_steps.Flow, or None: a redriven execution takes its slot back

    def redrive(self, execution_id: str, request_id: str | None = None) -> dict[str, Any]:
        """Continue a FAILED or TIMED_OUT execution; returns {id, redrive_count, steps}.

        RedriveRefused (nothing recorded) when it cannot go on; `request_id` makes a retried call
        answer with the redrive it already made instead of a refusal."""
        if request_id is not None and (problem := signal_id_problem(request_id)):  # as a signal id
            raise ValidationError(problem, "request_id")
        state = self.load_state(execution_id)
        mid = f"redrive:{request_id or self.ids.token()}"
        if mid not in state.inbound:
            refusal = redrive_refusal(state)
            if refusal is not None:
                done = self._redrive_made_by(execution_id, mid)
                if done is not None:
                    return done
                raise RedriveRefused(execution_id, refusal)
        held = self.flow.hold_for_redrive(state) if self.flow is not None \
            and mid not in state.inbound else None  # flow control: it runs again, so it takes a slot
        self._process(execution_id, [RedriveMessage(execution_id, mid)])
        cached = self._cached_state(execution_id)
        state = cached if cached is not None else self.load_state(execution_id)
        if held is not None and mid not in state.inbound:
            self.flow.give_back(held)  # not redriven: the slot goes back
        if mid not in state.inbound:  # another redrive won the race: this one changed nothing
            refusal = redrive_refusal(state) or f"execution {execution_id!r} was not redriven"
            raise RedriveRefused(execution_id, f"{refusal} (redriven by another request at the same time)")
        return self._redrive_made_by(execution_id, mid) or {"id": execution_id,
                                                            "redrive_count": state.redrive_count}

    def _redrive_made_by(self, execution_id: str, mid: str) -> dict[str, Any] | None:
        """The redrive request `mid` recorded, read from history (newest first), or None."""
        for r in reversed(self._records(execution_id)):
            e = r.event
            if isinstance(e, ExecutionRedriven) and e.request_id == mid:
                return {"id": execution_id, "redrive_count": e.redrive_count, "steps": list(e.steps)}
        return None

    def fork(self, execution_id: str, from_step: str, new_id: str | None = None,
             version: str | None = None, despite_compensation: bool = False) -> str:
        """Start a new execution that reuses the outputs of the steps of `execution_id` that ended
        before `from_step` first ran, and runs the rest on the current workflow; returns its id.
        ForkAfterCompensation when some of those steps were compensated, unless
        `despite_compensation`."""
        if not isinstance(from_step, str) or not from_step:
            raise ValidationError("is required (the step to run again from)", "from_step")
        if new_id is not None and (problem := execution_id_problem(new_id)):  # the rule a start's id follows
            raise ValidationError(problem, "id")
        state = self.load_state(execution_id)
        wf = self.registry.get(state.workflow, version)
        problem = fork_step_problem(state, wf, from_step)
        if problem is not None:
            raise ValidationError(problem, "from_step")
        fork_id = new_id or f"{execution_id}-fork-{self.ids.token()[:12]}"
        if fork_id == execution_id:
            raise ValidationError("a fork needs an id of its own", "id")
        origin = {"execution_id": execution_id, "step": from_step}
        self._check_fork_id(fork_id, origin)
        units = fork_units(state, self._records(execution_id), from_step)
        undone = [k for k in units if f"compensate:{k}" in state.units]
        if undone and not despite_compensation and not self._is_fork(fork_id, origin):
            raise ForkAfterCompensation(execution_id, (
                f"a fork of {execution_id!r} from step {from_step!r} would reuse the outputs of "
                f"{', '.join(repr(k) for k in undone)}, whose compensation ran (their effects were "
                "undone); confirm with --despite-compensation (API: \"despite_compensation\": true)"))
        pinned = None if version is None else str(wf.version)
        msg = StartMessage(fork_id, f"start:{fork_id}", wf.name, pinned, state.input, None,
                           {**origin, "units": units})
        self._process(fork_id, [msg])
        return fork_id

    def _is_fork(self, fork_id: str, origin: dict[str, str]) -> bool:
        """A retried fork request (the fork exists already): answered as before, not refused."""
        try:
            return bool(self.load_state(fork_id).forked_from == origin)
        except NotFound:
            return False

    def _check_fork_id(self, fork_id: str, origin: dict[str, str]) -> None:
        try:
            existing = self.load_state(fork_id)
        except NotFound:
            return
        if existing.forked_from != origin:
            raise ExecutionExists(fork_id, f"execution {fork_id!r} already exists and is not a fork of "
                                           f"{origin['execution_id']!r} from step {origin['step']!r}")

    def _records(self, execution_id: str) -> list[Recorded]:
        out: list[Recorded] = []
        cursor: int | None = 0
        while cursor is not None:
            page = self.store.history(execution_id, cursor, 1000)
            out.extend(page.records)
            cursor = page.next_after_seq
        return out
