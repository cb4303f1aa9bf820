"""Targeted speed fixes for moto 5.2.5 internals that a deep queue or many requests make slow.

Measured on a 1,000-element fan-out (`benchmarks/bench_fanout.py`, cProfile): moto's
SQS re-derives every queue attribute on each SendMessage (three scans of the whole
queue, each message asking the clock twice through properties), rescans the queue
on each ReceiveMessage and twice per deleted receipt handle, and its request
dispatch lists a response class's methods with `inspect.getmembers` on every call.
With 1,000 messages in flight that made one send cost milliseconds.

Each replacement returns exactly what moto's code returns (same messages, same
order, same errors); it only reads the clock once per call instead of once per
message, and caches what cannot change. Internals differ between moto releases,
so nothing is replaced unless the installed moto is the version these were read
from (`MOTO_VERSION`); another version runs unpatched (correct, only slower).
The clock swap in `clock.py` must come first: these read `unix_time_millis`
from moto's SQS module at call time, so they see virtual time.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

log = logging.getLogger("orbit.local")

MOTO_VERSION = "5.2.5"
_installed = False


def install() -> bool:
    """Apply the fixes once per process; False (and nothing changed) on another moto version."""
    global _installed
    if _installed:
        return True
    import moto

    if moto.__version__ != MOTO_VERSION:
        log.info("moto %s (not %s): no local speed fixes applied", moto.__version__, MOTO_VERSION)
        return False
    _patch_sqs_queue()
    _patch_dispatch()
    from . import moto_speed_calls, moto_speed_requests
    from .moto_speed_dynamodb import patch_item, patch_put_validation, patch_query

    patch_query()
    patch_item()
    patch_put_validation()
    moto_speed_calls.install()
    moto_speed_requests.install()
    _installed = True
    return True


def _patch_sqs_queue() -> None:
    import moto.sqs.models as m

    Queue = m.Queue

    # `Message.visible` is `now > visible_at`, `Message.delayed` is `now < delayed_until`,
    # each calling the clock; one `now` per scan gives the same answer without the calls.
    def messages(self: Any) -> list[Any]:
        now = m.unix_time_millis()
        return [msg for msg in self._messages if now > msg.visible_at and not now < msg.delayed_until]

    def approximate_number_of_messages_delayed(self: Any) -> int:
        now = m.unix_time_millis()
        return sum(1 for msg in self._messages if now < msg.delayed_until)

    def approximate_number_of_messages_not_visible(self: Any) -> int:
        now = m.unix_time_millis()
        return sum(1 for msg in self._messages if not now > msg.visible_at)

    # moto scans the queue once to check the handle exists and once more to drop it,
    # building a list of every message's handles at each step; one pass does both.
    def delete_message(self: Any, receipt_handle: str) -> None:
        if receipt_handle in self.deleted_messages:
            return  # already deleted: SQS accepts deleting it again
        kept: list[Any] = []
        found = False
        for msg in self._messages:
            if msg.receipt_handle == receipt_handle or receipt_handle in msg._old_receipt_handles:
                found = True
                self.pending_messages.discard(msg)
                self.deleted_messages.update(msg.all_receipt_handles)
                continue
            kept.append(msg)
        if not found:
            raise m.ReceiptHandleIsInvalid()
        self._messages = kept

    Queue.messages = property(messages)  # type: ignore[assignment]
    Queue.approximate_number_of_messages_delayed = property(  # type: ignore[assignment]
        approximate_number_of_messages_delayed
    )
    Queue.approximate_number_of_messages_not_visible = property(  # type: ignore[assignment]
        approximate_number_of_messages_not_visible
    )
    Queue.delete_message = delete_message  # type: ignore[method-assign]


def _patch_dispatch() -> None:
    import moto.core.responses as responses

    # Called with the response class on every request; a class's functions do not change
    # while the process runs, so the answer can be kept per class.
    responses.method_names_from_class = functools.lru_cache(maxsize=None)(  # type: ignore[assignment]
        responses.method_names_from_class
    )
