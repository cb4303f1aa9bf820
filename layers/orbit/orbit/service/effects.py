"""Carrying out a decision's effects, after its commit (a mixin of `Engine`).

Effects are data (orbit.core.history.effects) the decider returns; they are sent only once the
commit that produced them landed, and sent again, unchanged, for a redelivered message whose commit
is found (service/outbox.py): a crash between commit and send loses nothing. A re-sent dispatch is
marked `resent` (the first copy may have run: worker/dedupe.py). Inline dispatches are taken out
first (service/inline.py): they run in this process or are handed over, never queued. A timer's
effect is carried out twice: armed here, then turned into a `wake` message when due (`fire_timers`).
"""

from __future__ import annotations

import threading
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
from orbit.core.tracing import BODY_KEY
from orbit.service import inline


class EffectSteps:
    """Mixin of Engine: `queues`, `timers`, `store`, `clock` and `_local` (.trace) come from the engine."""

    queues: Any
    clock: Any
    timers: Any
    store: Any
    _local: threading.local

    def _carry_out(self, eid: str, effects: list[Effect], expiry: tuple[int | None, bool],
                   fresh: bool = True, seq: int | None = None) -> None:
        """Send `effects` after their commit; `expiry` ((expires_at_s, provisional), what
        `_write_expiry` gives for the execution's current state) goes on the hook rows it writes.
        `seq`: the last seq of the state they were derived from (the commit's, or the verified
        head's): a timer is armed only if no newer commit armed one (Timers.arm)."""
        header = getattr(self._local, "trace", None)
        trace = {BODY_KEY: header} if header else {}
        # A re-sent dispatch is marked: the first copy may have run already (worker/dedupe.py).
        resent = {} if fresh else {"resent": True}
        for e in inline.carry_out(self, eid, effects, fresh):
            if isinstance(e, DispatchTask):
                self.queues.send_task(e.queue, {**e.to_dict(), **trace, **resent})
            elif isinstance(e, CancelTask):
                self.queues.send_task(e.queue, {**e.to_dict(), **trace})
            elif isinstance(e, ArmTimer):
                self.timers.arm(e.execution_id, e.fire_at_ms, seq)
            elif isinstance(e, RegisterHook):
                self.store.put_hook(e.token, e.execution_id, e.name, *expiry)
            elif isinstance(e, StartChild):
                self.queues.send_decision(
                    self._start_body(
                        e.child_id,
                        e.workflow,
                        e.version,
                        e.input,
                        {"execution_id": e.parent_id, "step": e.unit},
                    )
                    | trace
                )
            elif isinstance(e, ContinueExecution):
                body = self._start_body(e.new_execution_id, e.workflow, e.version, e.input, e.parent)
                body["continued_from"] = e.execution_id
                if e.signals:
                    body["signals"] = e.signals
                if e.idle_hops:
                    body["idle_hops"] = e.idle_hops
                self.queues.send_decision(body | trace)
            elif isinstance(e, ForwardSignal):
                self.queues.send_decision({"kind": "signal", "execution_id": e.execution_id,
                                           "id": e.message_id, "name": e.name, "payload": e.payload} | trace)
            elif isinstance(e, CancelChild):
                self.queues.send_decision(
                    {
                        "kind": "cancel",
                        "execution_id": e.child_id,
                        "id": f"cancel:{e.child_id}",
                        "reason": e.reason,
                        "force": False,
                        "parent_id": eid,
                    }
                    | trace
                )
            elif isinstance(e, ContinueDecision):
                self.queues.send_decision(
                    {"kind": "wake", "execution_id": e.execution_id, "id": e.message_id}
                )
            elif isinstance(e, NotifyParent):
                self.queues.send_decision(
                    {
                        "kind": "child_done",
                        "execution_id": e.parent_id,
                        "id": e.message_id,
                        "unit": e.unit,
                        "child_id": e.child_id,
                        "status": e.status,
                        "output": e.output,
                        "error": e.error.to_dict() if e.error else None,
                    }
                    | trace
                )

            elif isinstance(e, RedriveChild):
                self.queues.send_decision({"kind": "redrive", "execution_id": e.child_id, "id": e.request_id,
                                           "parent_id": e.parent_id, "unit": e.unit})
            elif isinstance(e, LinkFork):
                self.queues.send_decision({"kind": "fork_created", "execution_id": e.execution_id,
                                           "id": f"fork_created:{e.fork_id}", "fork_id": e.fork_id,
                                           "from_step": e.from_step})

    @staticmethod
    def _start_body(
        eid: str, workflow: str, version: str | None, input: Any, parent: dict[str, str] | None
    ) -> dict[str, Any]:
        return {
            "kind": "start",
            "execution_id": eid,
            "id": f"start:{eid}",
            "workflow": workflow,
            "version": version,
            "input": input,
            "parent": parent,
        }

    # ----------------------------------------------------------------- timers
    def fire_timers(self, now_ms: int | None = None, limit: int = 100) -> int:
        """Turn due timers into `wake` messages; returns how many fired."""
        now = self.clock.now_ms() if now_ms is None else now_ms
        due = self.timers.due(now, limit)
        for eid, at in due:
            self.queues.send_decision({"kind": "wake", "execution_id": eid, "id": f"wake:{eid}:{at}"})
            self.timers.disarm(eid, at)
        return len(due)
