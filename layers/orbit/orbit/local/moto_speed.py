"""Targeted speed fixes for moto 5.2.5 internals that a deep queue or many requests make slow.

Measured on a 1,000-element fan-out (`benchmarks/bench_fanout.py`, cProfile): moto's
SQS re-derives every queue attribute on each SendMessage (three scans of the whole
queue, each message asking the clock twice through properties), rescans the queue
on each ReceiveMessage and twice per deleted receipt handle, and its request
dispatch lists a response class's methods with `inspect.getmembers` on every call.
With 1,000 messages in flight that made one send cost milliseconds. SendMessage still worked
out every queue attribute (three scans) to read one, ContentBasedDeduplication; it now reads
just that one, spelled as the attribute list spells it.

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
    _patch_sqs_send()
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


def _patch_sqs_send() -> None:
    import hashlib
    import string

    import moto.sqs.models as m

    original = getattr(m.SQSBackend.send_message, "original", m.SQSBackend.send_message)

    def content_based_deduplication(queue: Any) -> Any:
        """`queue.attributes.get("ContentBasedDeduplication")` without working out the other attributes
        (three of which scan the whole queue): only a FIFO queue has it, a bool spelled in lower case."""
        if not queue.fifo_queue:
            return None
        value = queue.content_based_deduplication
        return str(value).lower() if isinstance(value, bool) else value

    # moto 5.2.5's SQSBackend.send_message, reading the one attribute it needs (see above)
    def send_message(  # moto's signature
        self: Any, queue_name: str, message_body: str, message_attributes: dict[str, Any] | None = None,
        delay_seconds: int | None = None, deduplication_id: str | None = None, group_id: str | None = None,
        system_attributes: dict[str, Any] | None = None, validate_group_id: bool = True,
    ) -> Any:
        queue = self.get_queue(queue_name)
        self._validate_message(queue, message_body=message_body, delay_seconds=int(delay_seconds or 0),
                               deduplication_id=deduplication_id, group_id=group_id,
                               validate_group_id=validate_group_id)
        if delay_seconds is not None:
            delay_seconds = int(delay_seconds)
        else:
            delay_seconds = queue.delay_seconds
        message_id = str(m.random.uuid4())
        message = m.Message(message_id, message_body, system_attributes)
        if content_based_deduplication(queue) == "true":
            sha256 = hashlib.sha256()
            sha256.update(message_body.encode("utf-8"))
            message.deduplication_id = sha256.hexdigest()
        if deduplication_id is not None:
            message.deduplication_id = deduplication_id
            message.sequence_number = "".join(m.random.choice(string.digits) for _ in range(20))
        if group_id is not None:
            message.group_id = group_id
        if message_attributes:
            message.message_attributes = message_attributes
        if delay_seconds > m.MAXIMUM_MESSAGE_DELAY:  # type: ignore[operator]
            msg = (
                f"Value {delay_seconds} for parameter DelaySeconds is invalid. "
                "Reason: DelaySeconds must be >= 0 and <= 900."
            )
            raise m.InvalidParameterValue(msg)
        message.mark_sent(delay_seconds=delay_seconds)
        queue.add_message(message)
        return message

    send_message.original = original  # type: ignore[attr-defined]
    send_message.content_based_deduplication = content_based_deduplication  # type: ignore[attr-defined]
    m.SQSBackend.send_message = send_message  # type: ignore[method-assign]


def _patch_dispatch() -> None:
    import moto.core.responses as responses

    # Called with the response class on every request; a class's functions do not change
    # while the process runs, so the answer can be kept per class.
    responses.method_names_from_class = functools.lru_cache(maxsize=None)(  # type: ignore[assignment]
        responses.method_names_from_class
    )
