"""Which deliveries of a task message can be duplicates, and what the worker does about one.

A task message reaches a worker twice in three ways:
- (d1) the decider re-sends the dispatches of a commit whose sends it may have missed (it crashed
  between its send and its ack; `service.outbox.still_due`). Those copies carry `resent: true`;
- (d2) SQS redelivers a message whose worker invocation failed after the task ran (and, for a
  quick task, after its result left): `ApproximateReceiveCount` > 1;
- (d3) SQS's rare spurious duplicate, handed over as a first receive. Accepted when it arrives
  within OLD_MESSAGE_MS of the send while the first answer is unrecorded (with the record, two
  deliveries within the same second could both run); a later one looks back (`waited`).

A fresh delivery (receive count 1, not re-sent, attempt 1, not waiting in the queue for more than
`OLD_MESSAGE_MS`) therefore reads and writes no dedupe record when its task ends within the
worker's grace period: its result message is its record (the decider folds it into the history).
A task that runs past the grace claims the key with a lease, as before, and stores its outcome.

A possible duplicate (`suspect`) reads the dedupe record first (a long first run left one), then,
if there is none, the execution's history (`verdict`): an attempt that is no longer open (its
result recorded, a newer attempt dispatched, the execution ended or gone) is acknowledged without
running. An open one may have its first run's result still in flight: the message is made visible
again after `SETTLE_DELAY_S` and fails its record, so it comes back; the deferrals together outlast
every redelivery the decision queue gives a first result whose decision failed, so by then it is
recorded (or dead-lettered); at
`SETTLE_RECEIVES` receives (task queues' maxReceiveCount is 8: the two settling receives must
not eat the budget for faults, chaos seed 5782) it runs with the key claimed first,
so any copy after it finds that claim.
A first delivery sent more than `OLD_MESSAGE_MS` ago (`waited`: a queue backlog, or a late copy
SQS delivers as new) reads the record and, without one, the history too: answered attempts are
acknowledged, open ones run at once (it is most likely the only copy, behind a backlog; a settled
duplicate that ran it left its claim). A retry's attempt (> 1) reads the record only: a long
attempt 1 leaves its result for attempt 2 to reuse, as the dedupe record always did.

An unknown answer is never "open" (issue 24, finding 6): a history read that fails (throttled after
the SDK's own retries, any error of the store) is tried READ_ATTEMPTS times with backoff, then the
message goes back to the queue (`HistoryUnreadable`, a failed record of the batch; it comes back
after UNREADABLE_DELAY_S as a redelivery, which settles like any possible duplicate). Running it
would run a task whose answer may already be recorded: the quick first run kept no record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from orbit.core.history.effects import DispatchTask
from orbit.core.history.state import ExecutionState
from orbit.errors import NotFound, OrbitError

log = logging.getLogger("orbit.worker")

SETTLE_RECEIVES = 3  # a possible duplicate whose attempt is still open runs at this receive count
# Until then it comes back after SETTLE_DELAY_S (its visibility timeout). The deferrals together
# outlast the first run's result message's whole life on the decision queue: a result whose decision
# fails (a throttled read or write, after the SDK's retries) is handed over again after the queue's
# VisibilityTimeout, up to maxReceiveCount receives, then dead-lettered. So by the copy's last look
# the result is recorded or in the DLQ, never still in flight (chaos seed 6609: a result failed to be
# decided four times, 543 s, and the copy that had settled 2 x 200 s ran the task again).
DECISION_VISIBILITY_S = 180  # the DecisionQueue's VisibilityTimeout in template.yaml
DECISION_RECEIVES = 5  # and its maxReceiveCount (tests/unit/test_worker_dedupe.py reads both)
DECIDE_S = 20  # to decide the last receive of the result
HELD_S = 2  # a quick run's answer waits up to twice the worker's 1 s grace in its batch
SETTLE_WINDOW_S = (DECISION_RECEIVES - 1) * DECISION_VISIBILITY_S + DECIDE_S + HELD_S  # 742 s
SETTLE_DELAY_S = -(-SETTLE_WINDOW_S // (SETTLE_RECEIVES - 1))  # 371 s per deferral
OLD_MESSAGE_MS = 5_000  # a fresh message older than this looks back too (a backlog, a late SQS copy)
READ_ATTEMPTS = 3  # history reads per look-back before the message goes back to the queue
READ_BACKOFF_S = (0.1, 0.4)  # waits between them
UNREADABLE_DELAY_S = 10  # then the message comes back after this long (its visibility timeout)
Sleep = Callable[[float], None]

Verdict = Literal["ack", "defer", "run"]


class TaskDeferred(OrbitError):
    """A possible duplicate whose first delivery may still be reporting: retried after SETTLE_DELAY_S."""


class HistoryUnreadable(TaskDeferred):
    """Whether a possible duplicate's attempt was answered is unknown (the history read failed):
    the message goes back to the queue and comes back after UNREADABLE_DELAY_S."""


@dataclass(frozen=True)
class Delivery:
    """What SQS says about one delivery of a message (Lambda's record attributes, or ReceiveMessage's)."""

    receive_count: int = 1
    sent_at_ms: int | None = None

    @classmethod
    def of(cls, attributes: Mapping[str, Any] | None) -> Delivery:
        """From `ApproximateReceiveCount` and `SentTimestamp`; a missing or unreadable value counts as
        a first, fresh delivery (the shape a caller without SQS passes)."""
        attrs = attributes if isinstance(attributes, Mapping) else {}
        return cls(max(1, _int(attrs.get("ApproximateReceiveCount")) or 1), _int(attrs.get("SentTimestamp")))


def _int(value: Any) -> int | None:
    try:
        return int(str(value)) if value is not None else None
    except ValueError:
        return None


def suspect(body: Mapping[str, Any], d: DispatchTask, delivery: Delivery) -> bool:
    """Could another delivery of this attempt have run it already?"""
    return delivery.receive_count > 1 or body.get("resent") is True or d.redelivery


def waited(delivery: Delivery, now_ms: int) -> bool:
    """Was the message sent more than OLD_MESSAGE_MS ago (a queue backlog, or SQS's late copy)?"""
    return delivery.sent_at_ms is not None and now_ms - delivery.sent_at_ms > OLD_MESSAGE_MS


def attempt_open(state: ExecutionState, d: DispatchTask) -> bool:
    """Does the execution still wait for this dispatch's answer (same attempt, same token)?"""
    return state.waits_for(d.unit, d.attempt, d.token)


def is_open(history: Any, d: DispatchTask, sleep: Sleep = time.sleep, looks: Any = None) -> bool:
    """Does the execution still wait for this dispatch's answer? `history` has `load(execution_id) ->
    Loaded` (the decider's store, read-only here); without it (a worker role without the grant: the
    caller keeps a dedupe record for every task) the attempt counts as open. A read that fails is
    tried READ_ATTEMPTS times, `sleep`ing READ_BACKOFF_S between; then `HistoryUnreadable`: an
    unknown answer never counts as open. `looks` (worker/looks.py): the states read before, brought
    up to date with the commits since instead of loaded whole."""
    if history is None:
        return True
    failure: Exception | None = None
    for attempt in range(READ_ATTEMPTS):
        if attempt:
            sleep(READ_BACKOFF_S[min(attempt - 1, len(READ_BACKOFF_S) - 1)])
        try:
            if looks is not None:
                return bool(looks.check(history, d, attempt_open))
            return attempt_open(history.load(d.execution_id).fold(), d)
        except NotFound:
            return False  # the execution is gone (retention): nobody waits for the answer
        except Exception as e:
            failure = e
            log.warning("could not read the history of %s to check a possible duplicate of %s "
                        "(read %d of %d): %s: %s", d.execution_id, d.unit, attempt + 1, READ_ATTEMPTS,
                        type(e).__name__, e, exc_info=attempt + 1 == READ_ATTEMPTS)
    raise HistoryUnreadable(
        f"step {d.unit!r} of {d.execution_id!r} (attempt {d.attempt}) may have been answered already and "
        f"its history could not be read {READ_ATTEMPTS} times ({type(failure).__name__}: {failure}): the "
        f"message goes back to the queue, retried in {UNREADABLE_DELAY_S} s") from failure


PROBE_EXECUTION = "orbit-worker-history-probe"
DENIED = frozenset({"AccessDeniedException", "AccessDenied", "UnauthorizedOperation"})


def readable(history: Any) -> bool | None:
    """Can this process read histories? One Query of an execution that (most likely) does not exist:
    True, False when the role lacks the grant (then every task keeps its dedupe record, the
    protocol before issue 15), None when the read failed otherwise (ask again later)."""
    if history is None:
        return False
    try:
        history.load(PROBE_EXECUTION)
    except NotFound:
        return True
    except Exception as e:  # noqa: BLE001 - classified below
        code = (getattr(e, "response", None) or {}).get("Error", {}).get("Code")
        if code in DENIED:
            log.warning("this worker cannot read execution histories (%s): every task keeps its dedupe "
                        "record; grant dynamodb:Query on EXEC#* keys to save it (docs/deploying.md)", code)
            return False
        return None
    return True


def verdict(history: Any, d: DispatchTask, receive_count: int, sleep: Sleep = time.sleep,
            looks: Any = None) -> Verdict:
    """A possible duplicate with no dedupe record: acknowledge it, let it come back later, or run it
    (`HistoryUnreadable` when its history cannot be read)."""
    if not is_open(history, d, sleep, looks):
        return "ack"
    return "run" if receive_count >= SETTLE_RECEIVES else "defer"
