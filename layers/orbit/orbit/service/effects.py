"""Carrying out a decision's effects, after its commit: `Effects`, stage 5 of `Engine`'s pipeline.

Effects are data (orbit.core.history.effects) the decider returns; they are sent only once the
commit that produced them landed, and sent again, unchanged, for a redelivered message whose commit
is found (service/outbox.py): a crash between commit and send loses nothing. A re-sent dispatch is
marked `resent` (the first copy may have run: worker/dedupe.py). Inline dispatches are taken out
first (service/inline.py): they run in this process or are handed over, never queued. A timer's
effect is carried out twice: armed here, then turned into a `wake` message when due (`fire_timers`).
"""

from __future__ import annotations

from typing import Any

from orbit.core.history.effects import (
    ArmTimer,
    CancelChild,
    CancelTask,
    ContinueDecision,
    ContinueExecution,
    DispatchTask,
    Effect,
    ForwardSignal,
    LinkFork,
    NotifyParent,
    RedriveChild,
    RegisterHook,
    StartChild,
)
from orbit.core.history.messages import (
    CancelMessage,
    ChildDoneMessage,
    ForkCreatedMessage,
    RedriveMessage,
    SignalMessage,
    StartMessage,
    WakeMessage,
)
from orbit.core.history.queue_bodies import TaskCancel, TaskDispatch
from orbit.core.tracing import BODY_KEY
from orbit.service import inline
from orbit.service.ports import Clock, HistoryStore, Queues, Timers
from orbit.service.turn import Turn

MAX_LEAD_MS = 900_000  # SQS's longest DelaySeconds: a timer is handed over at most this far ahead


class Effects:
    """Stage 5: what a commit asks for, sent (queues), armed (timers) or registered (the hook rows)."""

    def __init__(self, queues: Queues, timers: Timers, store: HistoryStore, clock: Clock,
                 flow: Any = None) -> None:
        self.queues, self.timers, self.store, self.clock = queues, timers, store, clock
        # service.flow_steps.Flow, or None (no flow control): a dispatch under a limit waits its turn
        self.flow = flow

    def carry_out(self, eid: str, effects: list[Effect], expiry: tuple[int | None, bool],
                  fresh: bool = True, seq: int | None = None, turn: Turn | None = None,
                  runner: inline.InlineRunner | None = None) -> None:
        """Send `effects` after their commit; `expiry` ((expires_at_s, provisional), what
        `Retention.write_expiry` gives for the execution's current state) goes on the hook rows it
        writes. `seq`: the last seq of the state they were derived from (the commit's, or the verified
        head's): a timer is armed only if no newer commit armed one (Timers.arm). `turn`: the
        decision's pass (its trace header; inline attempts it runs here); None outside a decision.
        `runner`: where inline attempts run (a decider's), else None: they are handed over."""
        header = turn.trace if turn is not None else None
        trace = {BODY_KEY: header} if header else {}
        # A re-sent dispatch is marked `resent`: the first copy may have run already (worker/dedupe.py).
        for e in inline.carry_out(runner, self.queues, self.clock, eid, effects, fresh, turn):
            if isinstance(e, DispatchTask):
                body = TaskDispatch.of(e, resent=not fresh).to_dict() | trace
                if self.flow is None or not self.flow.dispatch(e, body, seq):  # service/flow_steps.py
                    self.queues.send_task(e.queue, body)
            elif isinstance(e, CancelTask):
                self.queues.send_task(e.queue, TaskCancel.of(e).to_dict() | trace)
            elif isinstance(e, ArmTimer):
                self.timers.arm(e.execution_id, e.fire_at_ms, seq)
            elif isinstance(e, RegisterHook):
                self.store.put_hook(e.token, e.execution_id, e.name, *expiry)
            elif isinstance(e, StartChild):
                child = StartMessage(e.child_id, f"start:{e.child_id}", e.workflow, e.version, e.input,
                                     {"execution_id": e.parent_id, "step": e.unit})
                self.queues.send_decision(child.to_dict() | trace)
            elif isinstance(e, ContinueExecution):
                # `signals` and `idle_hops` travel only when set (OMIT_IF_NONE), as the run's first start
                start = StartMessage(e.new_execution_id, f"start:{e.new_execution_id}", e.workflow, e.version,
                                     e.input, e.parent, continued_from=e.execution_id,
                                     signals=e.signals or None, idle_hops=e.idle_hops or None)
                self.queues.send_decision(start.to_dict() | trace)
            elif isinstance(e, ForwardSignal):
                self.queues.send_decision(
                    SignalMessage(e.execution_id, e.message_id, e.name, e.payload).to_dict() | trace)
            elif isinstance(e, CancelChild):
                self.queues.send_decision(
                    CancelMessage(e.child_id, f"cancel:{e.child_id}", e.reason, False, eid).to_dict() | trace)
            elif isinstance(e, ContinueDecision):
                self.queues.send_decision(WakeMessage(e.execution_id, e.message_id).to_dict())
            elif isinstance(e, NotifyParent):
                self.queues.send_decision(
                    ChildDoneMessage(e.parent_id, e.message_id, e.unit, e.child_id, e.status, e.output,
                                     e.error).to_dict()
                    | trace
                )
            elif isinstance(e, RedriveChild):
                self.queues.send_decision(
                    RedriveMessage(e.child_id, e.request_id, e.parent_id, e.unit).to_dict())
            elif isinstance(e, LinkFork):
                self.queues.send_decision(
                    ForkCreatedMessage(e.execution_id, f"fork_created:{e.fork_id}", e.fork_id,
                                       e.from_step).to_dict())

    # ----------------------------------------------------------------- timers
    def fire_timers(self, now_ms: int | None = None, limit: int = 100, lead_ms: int = 0) -> int:
        """Turn timers due by `now + lead_ms` into `wake` messages, each delayed (SQS DelaySeconds,
        rounded up: never early) to its own time; returns how many were handed over.

        `lead_ms` 0 fires what is due now. With a lead (at most SQS's 15 minutes) the sweep hands a
        timer to SQS before its time and the wake lands on the second
        (docs/decisions/timers-on-the-second.md). The send comes before the disarm: a crash between
        them sends the same wake again at the next sweep, a duplicate the decider absorbs (a wake
        decides only what is due, and re-arms what is not)."""
        now = self.clock.now_ms() if now_ms is None else now_ms
        due = self.timers.due(now + min(max(lead_ms, 0), MAX_LEAD_MS), limit)
        for eid, at in due:
            delay_s = max(0, -(-(at - now) // 1000)) if lead_ms > 0 else 0
            self.queues.send_decision(WakeMessage(eid, f"wake:{eid}:{at}").to_dict(), min(delay_s, 900))
            self.timers.disarm(eid, at)
        return len(due)
