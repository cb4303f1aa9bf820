"""Flow control, carried out (docs/flow-control.md): concurrency slots, waiting lines, token buckets.

A decision's commit holds its dispatches (`DispatchTask`) and events; after the commit the engine
hands each gated dispatch to `FlowGate.dispatch` and each holder the commit ended to
`FlowGate.release` (orbit.core.flow.gates derives both from the commit, so a redelivered message
derives them again). A start is gated before it is decided (`admit_start`): nothing is committed
for an execution that waits. Every step is idempotent by holder id:

- acquire: one conditional write (room, or already a holder);
- a full counter: the item joins the line (one transaction: the counter still full, its line row,
  its ticket with what to send when let in);
- release: one conditional write (the holder is there); when someone waits, the next in line
  (priority, then weighted round-robin between tenants, then FIFO: core/flow/order.py) is let in
  by one transaction (room, the line row, the ticket marked granted) and its dispatch is sent;
- a granted ticket stays until its holder releases, so a redelivered release re-sends what a
  crash after a grant may have kept from leaving (`recovering=True`; the worker deduplicates).

A slot held by an attempt is given back when the attempt ends in the history: a result, a
failure, a timeout (attempt or heartbeat: a crashed worker), a cancel. Nothing else frees it.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from typing import Any, Protocol

from orbit.core.flow.gates import Bucket, Gate, Slot
from orbit.core.flow.order import Counter, after_grant, next_in_line
from orbit.core.history.events import TaskError
from orbit.core.history.messages import ResultMessage
from orbit.core.history.queue_bodies import FlowComeBack
from orbit.service.ports import Clock, Queues

log = logging.getLogger("orbit.flow")

MAX_SQS_DELAY_S = 900
RATE_LIMITED = "RATE_LIMITED"
MAX_RACES = 8
MAX_GRANTS_PER_RELEASE = 100  # one release lets in at most this many (the rest: the next release)


class LimitStore(Protocol):
    def acquire(self, slot: Slot, holder: str, now_ms: int) -> bool: ...
    def enqueue(self, slot: Slot, holder: str, priority: int, ticket: dict[str, Any],
                now_ms: int) -> bool: ...
    def release(self, slot: Slot, holder: str) -> Counter | None: ...
    def read(self, scope: str) -> Counter | None: ...
    def cancel_wait(self, slot: Slot, holder: str) -> bool: ...
    def head(self, scope: str, priority: int, tenant: str) -> tuple[str, dict[str, Any]] | None: ...
    def grant(self, slot: Slot, entry: str, holder: str, priority: int, tenant: str, vt: int,
              tenant_pass: int | None, now_ms: int) -> bool: ...
    def ticket(self, scope: str, holder: str) -> dict[str, Any] | None: ...
    def reserve(self, bucket: Bucket, now_ms: int) -> int | None: ...
    def record_drop(self, holder: str, reason: str, now_ms: int) -> None: ...
    def dropped(self, holder: str) -> dict[str, Any] | None: ...
    def list_counters(self) -> list[Counter]: ...
    def line(self, scope: str, limit: int = 20) -> list[dict[str, Any]]: ...


class FlowGate:
    def __init__(self, store: LimitStore, queues: Queues, clock: Clock, meter: Any = None) -> None:
        self.store, self.queues, self.clock, self.meter = store, queues, clock, meter

    # ------------------------------------------------------------------ in
    def dispatch(self, gate: Gate, queue: str, body: dict[str, Any]) -> None:
        """Send one attempt's `body` to `queue` once `gate` lets it: now, later, or when let in.
        A re-sent dispatch (a redelivered commit: `resent`) takes its slots (idempotent) and a token
        again, waiting for it if none is left: its first copy may not have taken one (a crash), and a
        `fail` policy must not fail what may have left."""
        self._pass(gate, 0, {"kind": "task", "queue": queue, "body": body}, resent=bool(body.get("resent")))

    def admit_start(self, gate: Gate, start: dict[str, Any]) -> bool | str:
        """True: the start goes on now (decide it). False: it waits in line or is held back by its
        rate (it comes back as a `FLOW_KEY` message). A string: its rate says drop, for that
        reason; the caller drops it (`drop_start`) unless the execution exists already (the same
        start again: its slot is the running execution's)."""
        send = {"kind": "start", "body": start}
        now = self.clock.now_ms()
        for i in range(len(gate.slots)):
            if not self._take(gate, i, send, now):
                return False
        b = gate.bucket
        if b is not None and b.on_exceed == "drop":
            if self.store.reserve(b, now) is None:
                return f"rate limit {b.name!r} key {b.key!r}: more than {b.rate} per {b.period_ms} ms"
            return True
        return self._rated(gate, send, now, True)

    def drop_start(self, gate: Gate, reason: str) -> None:
        """A start its rate dropped: its slots go back, the reason is kept for describe."""
        self.release(gate)
        self._count("FlowDropped", gate.bucket.name if gate.bucket is not None else "")
        self.store.record_drop(gate.holder, reason, self.clock.now_ms())
        log.info("start of %s dropped: %s", gate.holder, reason)

    def _pass(self, gate: Gate, index: int, send: dict[str, Any], now_ok: bool = False,
              resent: bool = False) -> bool:
        now = self.clock.now_ms()
        for i in range(index, len(gate.slots)):
            if not self._take(gate, i, send, now):
                return False
        if resent:
            # A redelivered commit: its first copy may have taken its token and left, or a crash
            # between the commit and the token's write may have kept it from taking one. It takes a
            # token again, waiting for one when none is left, and is never failed (its first copy
            # may have run): at worst a token is spent twice, the rate is never exceeded
            # (docs/decisions/flow3-task-limits.md, "The race after a crash").
            b, delay = gate.bucket, 0
            if b is not None:
                delay = self.store.reserve(replace(b, on_exceed="wait"), now) or 0
            self._send(send, now + delay, now, resent=True)
            return False
        return self._rated(gate, send, now, now_ok)

    def _take(self, gate: Gate, i: int, send: dict[str, Any], now: int) -> bool:
        slot = gate.slots[i]
        for _ in range(MAX_RACES):
            if self.store.acquire(slot, gate.holder, now):
                return True
            ticket = {"gate": gate.to_dict(), "index": i, "send": send}
            if self.store.enqueue(slot, gate.holder, gate.priority, ticket, now):
                self._count("FlowWaiting", slot.name)
                return False
        raise RuntimeError(f"flow: {slot.name!r} key {slot.key!r} changed {MAX_RACES} times in a row")

    def _rated(self, gate: Gate, send: dict[str, Any], now: int, now_ok: bool) -> bool:
        delay = 0
        b = gate.bucket
        if b is not None:
            got = self.store.reserve(b, now)
            if got is None:
                self._refused(gate, b, send, now)
                return False
            delay = got
        if delay <= 0 and now_ok:
            return True
        self._send(send, now + delay, now)
        return False

    def _send(self, send: dict[str, Any], at_ms: int, now: int, resent: bool = False) -> None:
        delay_s = max(0, math.ceil((at_ms - now) / 1000))
        if send["kind"] == "task" and delay_s <= MAX_SQS_DELAY_S:
            body = {**send["body"], "resent": True} if resent else send["body"]
            self.queues.send_task(send["queue"], body, delay_s)
            return
        # a start (decided when this comes back), or a wait longer than SQS's delay: comes back
        self.queues.send_decision(FlowComeBack(at_ms, send).to_dict(), min(delay_s, MAX_SQS_DELAY_S))

    def _refused(self, gate: Gate, b: Bucket, send: dict[str, Any], now: int) -> None:
        """A rate limit with `drop` (a start) or `fail` (an attempt) and no token now."""
        reason = f"rate limit {b.name!r} key {b.key!r}: more than {b.rate} per {b.period_ms} ms"
        self.release(gate)  # the slots it took before the rate said no
        self._count("FlowDropped" if b.on_exceed == "drop" else "FlowRateFailed", b.name)
        if send["kind"] == "start":  # let in from a line, then dropped: it never started
            self.store.record_drop(gate.holder, reason, now)
            log.info("start %s dropped: %s", send["body"].get("execution_id"), reason)
            return
        body = send["body"]
        error = TaskError(RATE_LIMITED, reason, retryable=False)
        self.queues.send_decision(ResultMessage(str(body["execution_id"]), f"result:{body['token']}",
                                                str(body["unit"]), str(body["token"]), None, error).to_dict())

    def come_back(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """A `FLOW_KEY` message: before its time it goes back to wait; a task is sent; a start is
        returned for the engine to decide (its gate was passed before it was held back)."""
        back = FlowComeBack.from_dict(message)
        if back is None:
            return None
        send, at, now = back.send, back.at_ms, self.clock.now_ms()
        if at > now + 999 or (send.get("kind") == "task" and at > now):
            self._send(send, at, now)
            return None
        if send.get("kind") == "start":
            return dict(send.get("body") or {})
        self._send(send, now, now)
        return None

    # ----------------------------------------------------------------- out
    def release(self, gate: Gate, recovering: bool = False) -> None:
        """Give back every slot `gate.holder` holds (or its place in line), and let the next in."""
        now = self.clock.now_ms()
        for slot in gate.slots:
            after = self.store.release(slot, gate.holder)
            if after is None:
                if self.store.cancel_wait(slot, gate.holder):
                    continue
                after = self.store.release(slot, gate.holder)  # let in while it left the line?
            if after is None:
                # Not a holder, not waiting: released before. A crash may have come between that
                # release and letting the next in, or between a grant and its send: both again.
                after = self.store.read(slot.scope)
                if after is None:
                    continue
                if recovering:
                    self._resend_granted(slot, after)
            elif after.waiting_total and gate.holder not in after.granted \
                    and self.store.cancel_wait(slot, gate.holder):  # it took the slot directly
                # it was still in this line too (it took the slot directly on a redelivery after a
                # crash): that entry is stale, let nobody grant it once more
                after = self.store.read(slot.scope) or after
            self._held(slot.name, len(after.holders))
            self._let_in(slot, after, now)

    def _let_in(self, slot: Slot, c: Counter, now: int) -> None:
        for _ in range(MAX_GRANTS_PER_RELEASE):
            pick = next_in_line(c, slot.limit)
            if pick is None:
                return
            priority, tenant = pick
            first = self.store.head(slot.scope, priority, tenant)
            if first is None:
                log.warning("flow: %s counts waiting items on line %s/%s it cannot find", slot.scope,
                            priority, tenant)
                return
            entry, ticket = first
            holder = str(ticket["gate"]["holder"])
            vt, tenant_pass = after_grant(c, priority, tenant)
            if not self.store.grant(slot, entry, holder, priority, tenant, vt, tenant_pass, now):
                # another release let someone in first: look again
                fresh = self.store.read(slot.scope)
                if fresh is None:
                    return
                if holder in fresh.holders:  # a stale entry: it holds the slot already (see release)
                    self.store.cancel_wait(slot, holder)
                    fresh = self.store.read(slot.scope) or fresh
                c = fresh
                continue
            c.holders.add(holder)
            self._held(slot.name, len(c.holders))
            c.waiting[(priority, tenant)] -= 1
            c.vt = vt
            if tenant_pass is None:
                c.passes.pop((priority, tenant), None)
            else:
                c.passes[(priority, tenant)] = tenant_pass
            self._observe(slot.name, now - int(ticket.get("since_ms") or now))
            self._pass(Gate.from_dict(ticket["gate"]), int(ticket["index"]) + 1, ticket["send"])

    def _resend_granted(self, slot: Slot, c: Counter) -> None:
        """A redelivered release: a grant made before a crash may not have left; send it again."""
        for holder in sorted(c.granted):
            t = self.store.ticket(slot.scope, holder)
            if t is not None:  # its next slots (taken or waited for again: idempotent), then the send
                self._pass(Gate.from_dict(t["gate"]), int(t["index"]) + 1, t["send"], resent=True)

    # -------------------------------------------------------------- metrics
    def _count(self, metric: str, name: str) -> None:
        if self.meter is not None:
            self.meter.count_workflow(name, metric)

    def _held(self, name: str, n: int) -> None:
        if self.meter is not None:
            self.meter.observe(name, "FlowHeldSlots", n)

    def _observe(self, name: str, waited_ms: int) -> None:
        if self.meter is not None:
            self.meter.observe(name, "FlowWaitTime", waited_ms)
