"""Stage 2 of the decision pipeline (`Engine._pipeline`): decide each new message on the loaded state.

A message the state remembers (`state.inbound`) or the commit log holds (`outbox.find_handled`) is a
redelivery: it is not decided again, its commit is found instead and its effects re-sent
(`Engine._after_commit`). A start with the id of an execution that exists is the same start again
(same input: nothing to do; else refused) or, from another parent, a squatted child id (the parent's
step fails). Everything else goes to the pure decider (`orbit.core.decider.decide`), with the
workflow `workflow_for` finds: the registered one a start names, else the execution's pinned build; a
build a deploy replaced parks the execution, unless the code runtime can switch to the deployed one
(docs/evolution.md).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from orbit.core.decider.decide import decide
from orbit.core.history.effects import Effect, NotifyParent
from orbit.core.history.events import Recorded, TaskError
from orbit.core.history.messages import Message, StartMessage
from orbit.core.history.state import ExecutionState
from orbit.errors import BuildMismatch, UnknownWorkflow
from orbit.service.outbox import find_handled
from orbit.service.ports import Commit, HistoryStore, IdSource, Registry
from orbit.service.replay_host import runtime_of
from orbit.service.starts import Starts

log = logging.getLogger("orbit.core.decider")

# message id -> (its sent_at_ms if the body carries one, SQS ApproximateReceiveCount or 1)
Deliveries = dict[str, tuple[int | None, int]]


@dataclass(frozen=True)
class DecideWith:
    """What deciding reads, as the engine holds it now (service/engine.py `Engine`)."""

    store: HistoryStore
    registry: Registry
    ids: IdSource
    retention_ms: int
    code_runtime: Any  # the runtime code workflows replay on, None: the process's (replay_host.runtime_of)


@dataclass
class Decided:
    """What stage 2 (`decide_messages`) gives the commit."""

    events: list[Recorded]
    effects: list[Effect]
    handled: list[str]  # the ids of the messages decided, first the commit's own
    resend: dict[int, Commit]  # first seq -> a redelivered message's commit, its effects to re-send
    workflow: Any  # the workflow the last message was decided with (None: none was)


def decide_messages(host: DecideWith, eid: str, state: ExecutionState, msgs: list[Message],
                    delivery: Deliveries, now: int) -> Decided:
    """Stage 2: decide each new message on `state` (advanced in place); a redelivery's commit is
    found instead (its effects are re-sent), in the state's inbound ids or the commit log."""
    events: list[Recorded] = []
    effects: list[Effect] = []
    handled: list[str] = []
    resend: dict[int, Commit] = {}
    wf: Any = None
    for m in msgs:
        if isinstance(m, StartMessage) and state.created:
            if (m.parent or state.parent) and m.parent != state.parent:
                effects.extend(Starts.not_the_parents(state, m))  # squatted child id: fail the step
                continue
            if not m.parent:
                Starts.check_same_start(state, m)  # same id again: same input returns it, else refused
        if m.id in handled:
            continue  # the same message twice in one batch: decided once
        if m.id in state.inbound:  # a redelivery: the history is the outbox
            seq = state.inbound[m.id]
            if seq not in resend:
                c = host.store.read_commit(eid, seq)
                if c is not None:
                    resend[seq] = c
            continue
        if any(m.id in c.all_inbound for c in resend.values()):
            continue  # a bundle's other message: its commit is already found
        old = find_handled(host.store, eid, state, m, *delivery.get(m.id, (None, 1)))
        if old is not None:  # handled longer ago than the state remembers
            log.info(
                "message %s of %s was handled by commit %d: re-sending its effects",
                m.id,
                eid,
                old.first_seq,
            )
            resend.setdefault(old.first_seq, old)
            continue
        if isinstance(m, StartMessage) and state.created:
            continue
        try:
            wf = workflow_for(host.registry, state, m)
        except UnknownWorkflow as e:
            if isinstance(m, StartMessage) and m.parent:  # a child that cannot start fails its step
                effects.append(
                    NotifyParent(
                        m.parent.get("execution_id", ""),
                        m.parent.get("step", ""),
                        eid,
                        "FAILED",
                        None,
                        TaskError(getattr(e, "code", "UNKNOWN_WORKFLOW"), str(e), False),
                    )
                )
                continue
            raise
        # A parked execution still records results, signals and cancels; its runtime is not run.
        d = decide(wf, state, m, now, host.ids, host.retention_ms,  # a start records its expiry
                   runtime_of(host) if getattr(wf, "kind", None) == "code" else None)
        events.extend(d.events)
        effects.extend(d.effects)
        handled.append(m.id)
    return Decided(events, effects, handled, resend, wf)


def workflow_for(registry: Registry, state: ExecutionState, m: Message | None) -> Any:
    """The workflow `m` is decided with (a `Parker` when the execution's build is gone)."""
    if isinstance(m, StartMessage):
        return registry.get(m.workflow, m.version)
    try:
        return registry.get_build(state.workflow, state.version, state.build)
    except (BuildMismatch, UnknownWorkflow) as e:
        # A deploy replaced the code: the code runtime replays the history on the build this
        # process holds and switches to it if it matches (definitions are never replaced).
        try:
            deployed = registry.get(state.workflow, state.version)
        except (BuildMismatch, UnknownWorkflow):
            deployed = None
        if getattr(deployed, "kind", None) == "code":
            return deployed
        return Parker(str(e))


class Parker:
    """Stands in for a workflow whose pinned build is gone: the execution parks."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.runtime = self

    def run(self, workflow: Any, state: ExecutionState, now_ms: int) -> list[Any]:
        from orbit.core.runtime.commands import Park

        return [Park(TaskError("BUILD_MISMATCH", self.reason, retryable=False))]
