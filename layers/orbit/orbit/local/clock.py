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

The swap is a patch of moto: it is made by `patches.applied()` while a stack runs (never on
import), undone when the last stack stops, and only on the moto versions it was read from
(`MOTO_CLOCK_VERSIONS`). On any other moto the clock patches no code: `advance_ms` moves every
SQS message's visibility and delay times back by what it skips, so the same messages become
visible at the same virtual times (SentTimestamp then stays on moto's wall clock, and a jump past
the retention period does not expire messages).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from typing import Any

log = logging.getLogger("orbit.local")

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
        if not _moto_on_virtual_time:
            _move_moto_messages(int(ms))


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


# read from 5.0.0 to 5.2.5: moto.sqs.models imports the same two time functions throughout
MOTO_CLOCK_VERSIONS = ((5, 0, 0), (6, 0, 0))
_moto_on_virtual_time = False  # is moto's SQS reading this clock now (patches.applied())?


def moto_version() -> tuple[int, ...]:
    import moto

    parts = []
    for part in str(moto.__version__).split(".")[:3]:
        digits = "".join(c for c in part if c.isdigit()) or "0"
        parts.append(int(digits))
    return tuple(parts)


def moto_clock_supported() -> bool:
    """Is the installed moto one the clock swap was read from, still shaped as it relies on?

    The swap replaces the two time functions `moto.sqs.models` imported by name from
    `moto.core.utils` (every SQS time, "now" included, is read through them there)."""
    import moto.core.utils as utils
    import moto.sqs.models as sqs_models

    from .patch_registry import original

    low, high = MOTO_CLOCK_VERSIONS
    return (low <= moto_version() < high
            and all(hasattr(sqs_models, name) and original(sqs_models, name) is getattr(utils, name, None)
                    for name in ("unix_time", "unix_time_millis")))


@functools.lru_cache(maxsize=1024)
def camelcase_to_underscores(name: str) -> str:
    """moto's attribute-name conversion (a regex on every call), kept per name: the one cached
    copy moto's SQS models and its request dispatch (moto_speed*.py) both use."""
    from moto.core.utils import camelcase_to_underscores as convert

    return convert(name)  # type: ignore[no-any-return]


def patch_moto() -> bool:
    """Make moto's SQS model read virtual time (only inside `patches.applied()`). False, and nothing
    changed, on a moto it was not read from: then `advance_ms` moves the messages' times instead."""
    global _moto_on_virtual_time
    from . import patch_registry

    if not moto_clock_supported():
        import moto

        log.info("moto %s: its SQS clock is not swapped; virtual time moves the messages instead",
                 moto.__version__)
        return False
    import moto.sqs.models as sqs_models

    real_unix_time = sqs_models.unix_time

    def unix_time(dt: Any = None) -> float:
        if dt is not None:
            return real_unix_time(dt)
        return time.time() + _offset_ms / 1000.0  # noqa: TID251

    def unix_time_millis(dt: Any = None) -> float:
        return unix_time(dt) * 1000.0

    patch_registry.put(sqs_models, "unix_time", unix_time)
    patch_registry.put(sqs_models, "unix_time_millis", unix_time_millis)
    patch_registry.on_undo(moto_unpatched)
    _moto_on_virtual_time = True
    return True


def moto_unpatched() -> None:
    global _moto_on_virtual_time
    _moto_on_virtual_time = False


def moto_now_ms() -> float:
    """"Now" as moto's SQS messages are timed: virtual time while moto reads this clock, else wall time
    (moto's own; `advance_ms` then moves the messages' times back by what it skips)."""
    real = time.time() * 1000.0  # noqa: TID251 - moto's float ms, as Message.visible reads it
    return real + _offset_ms if _moto_on_virtual_time else real


def _move_moto_messages(ms: int) -> None:
    """Without the clock swap: what becomes visible or due `ms` later in virtual time does so now in
    moto's (wall) time. Only visibility and delay move; the sent and first-receive timestamps stay
    as moto set them (on its wall clock)."""
    import sys

    models = sys.modules.get("moto.sqs.models")
    if models is None:
        return
    for _account, regions in models.sqs_backends.items():
        for _region, backend in regions.items():
            for queue in backend.queues.values():
                for msg in queue._messages:
                    if msg.visible_at:
                        msg.visible_at -= ms
                    if msg.delayed_until:
                        msg.delayed_until -= ms


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
            now = moto_now_ms()
            for queue in backend.queues.values():
                for msg in queue._messages:  # moto has no public view of this
                    for t in (msg.visible_at, msg.delayed_until):
                        if t and t > now and (best is None or t < best):
                            if t == msg.delayed_until and UNSERVED_MARK in msg.body and not _served(msg.body):
                                continue
                            best = int(t) + 1
    if best is None or _moto_on_virtual_time:
        return best
    return best + _offset_ms  # moto's wall-clock time as virtual time


def _served(body: str) -> bool:
    import json

    from orbit.worker.tasks import registered_tasks

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
            now = moto_now_ms()
            oldest_kept = now - int(queue.message_retention_period) * 1000  # type: ignore[attr-defined]
            expired = [m for m in queue._messages if m.sent_timestamp <= oldest_kept]  # type: ignore[operator]
            for m in expired:
                queue._messages.remove(m)
                queue.pending_messages.discard(m)
            exact = now  # Message.visible / .delayed with one clock read for the whole queue (it may be deep)
            return sum(
                1 for m in queue._messages if exact > m.visible_at and not exact < m.delayed_until
            )
    return None
