"""The local stack's virtual clock, shared with moto's SQS emulation.

Virtual time is wall time plus an offset that only grows while a stack is up
(it goes back to zero when the stack closes and its emulator state is gone). `advance()` moves the
offset, and because moto's SQS reads the same clock (we swap the two time
functions its model module imported), visibility timeouts, DelaySeconds and
redrive counting move with it: a message left for redelivery becomes visible
again after `advance(visibility_timeout)`, exactly as on AWS, without waiting.

Swapping moto's time functions also removes its hottest cost: moto computes
"now" through a timezone-aware `datetime` for every message on every call
(about 15 us each), which made a 1,000-message queue take tens of seconds.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

_lock = threading.Lock()
_offset_ms = 0  # process-wide: moto's backends are process-wide too


def now_ms() -> int:
    return int(time.time() * 1000) + _offset_ms  # noqa: TID251 - the edge that owns the clock


def offset_ms() -> int:
    return _offset_ms


def advance_ms(ms: int) -> None:
    """Move virtual time forward (never backward: SQS and timers assume monotonic time)."""
    global _offset_ms
    if ms < 0:
        raise ValueError(f"cannot move the clock backwards ({ms} ms)")
    with _lock:
        _offset_ms += int(ms)


def reset() -> None:
    global _offset_ms
    with _lock:
        _offset_ms = 0


class VirtualClock:
    """The `Clock` port (`now_ms()`) over virtual time, handed to the engine's handlers."""

    def now_ms(self) -> int:
        return now_ms()

    def now(self) -> float:
        return now_ms() / 1000.0


_installed = False


@functools.lru_cache(maxsize=1024)
def camelcase_to_underscores(name: str) -> str:
    """moto's attribute-name conversion (a regex on every call), kept per name: the one cached
    copy moto's SQS models and its request dispatch (moto_speed_calls.py) both use."""
    from moto.core.utils import camelcase_to_underscores as convert

    return convert(name)  # type: ignore[no-any-return]


def install_into_moto() -> None:
    """Make moto's SQS model read virtual time. Idempotent."""
    global _installed
    if _installed:
        return
    import moto.sqs.models as sqs_models

    real_unix_time = sqs_models.unix_time

    def unix_time(dt: Any = None) -> float:
        if dt is not None:
            return real_unix_time(dt)
        return time.time() + _offset_ms / 1000.0  # noqa: TID251

    def unix_time_millis(dt: Any = None) -> float:
        return unix_time(dt) * 1000.0

    sqs_models.unix_time = unix_time  # type: ignore[assignment]
    sqs_models.unix_time_millis = unix_time_millis  # type: ignore[assignment]
    # Two more hot spots with the same results, cheaper: moto converts every attribute
    # name with a regex on each access, and re-derives all queue attributes (O(depth))
    # to read one number for every message it receives.
    sqs_models.camelcase_to_underscores = camelcase_to_underscores

    def is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Any) -> bool:
        retention_s = int(self.get_queue(queue_name).message_retention_period)
        return retention_s + message.sent_timestamp / 1000 > unix_time()

    sqs_models.SQSBackend.is_message_valid_based_on_retention_period = (  # type: ignore[method-assign]
        is_message_valid_based_on_retention_period
    )
    _installed = True


UNSERVED_MARK = '"waiting_for_worker":'  # a task message sent back for want of a worker (worker/sdk.py)


def next_sqs_wake_ms() -> int | None:
    """Earliest virtual time at which an in-flight or delayed message becomes visible.

    Read straight from moto's backend (the server runs in this process), because
    SQS has no API that says when the next message will appear. A task message waiting for a
    worker that no function of this process serves yet is not a wake-up: its return finds no
    worker either, so skipping time to it would spin (until the step's queue timeout, a timer, or
    for ever).
    """
    from moto.sqs.models import sqs_backends

    best: int | None = None
    for _account, regions in sqs_backends.items():
        for _region, backend in regions.items():
            now = now_ms()
            for queue in backend.queues.values():
                for msg in queue._messages:  # moto has no public view of this
                    for t in (msg.visible_at, msg.delayed_until):
                        if t and t > now and (best is None or t < best):
                            if t == msg.delayed_until and UNSERVED_MARK in msg.body and not _served(msg.body):
                                continue
                            best = int(t) + 1
    return best


def _served(body: str) -> bool:
    import json

    from orbit.worker.sdk import registered_tasks

    try:
        task = json.loads(body).get("task")
    except (ValueError, AttributeError):
        return True
    return task in registered_tasks()


def visible_count(queue_name: str) -> int | None:
    """Messages receivable now in a queue (moto's backend, this process), or None if unknown.

    The pump asks before each ReceiveMessage: an empty receive costs a full
    emulated request, and most polls of most queues find nothing. It also drops
    messages older than the queue's retention period, as SQS does: moto keeps
    them, and its receive loop stops at the first one it meets, so once virtual
    time jumps past the retention period (4 days by default) a queue would
    otherwise return nothing ever again.
    """
    from moto.sqs.models import sqs_backends

    for _account, regions in sqs_backends.items():
        for _region, backend in regions.items():
            queue = backend.queues.get(queue_name)
            if queue is None:
                continue
            now = now_ms()
            oldest_kept = now - int(queue.message_retention_period) * 1000  # type: ignore[attr-defined]
            expired = [m for m in queue._messages if m.sent_timestamp <= oldest_kept]  # type: ignore[operator]
            for m in expired:
                queue._messages.remove(m)
                queue.pending_messages.discard(m)
            # Message.visible / .delayed with one clock read for the whole queue (it may be deep)
            exact = time.time() * 1000.0 + _offset_ms  # noqa: TID251 - moto's float ms, as Message.visible reads it
            return sum(
                1 for m in queue._messages if exact > m.visible_at and not exact < m.delayed_until
            )
    return None
