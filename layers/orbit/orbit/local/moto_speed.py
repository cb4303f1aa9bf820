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
so nothing is replaced unless the installed moto (and werkzeug) are the versions these were
read from (`MOTO_VERSION`, `WERKZEUG_VERSION`); another version runs unpatched (correct, only
slower), and so does any version with `ORBIT_LOCAL_SPEED_PATCHES=0`. They are put in by
`patches.applied()` while a stack runs and taken out when it stops; importing does nothing.
These read `unix_time_millis` from moto's SQS module at call time, so they see virtual time
when the clock swap (`clock.py`) is in.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from .patch_registry import put

log = logging.getLogger("orbit.local")

MOTO_VERSION = "5.2.5"
WERKZEUG_VERSION = "3.1.9"  # moto_speed_requests.py rebuilds werkzeug's EnvironBuilder output


def supported() -> bool:
    """Are the installed moto and werkzeug the versions these fixes were read from?"""
    from importlib.metadata import version

    import moto

    werkzeug = version("werkzeug")
    if moto.__version__ != MOTO_VERSION or werkzeug != WERKZEUG_VERSION:
        log.info("moto %s, werkzeug %s (not %s, %s): no local speed fixes applied",
                 moto.__version__, werkzeug, MOTO_VERSION, WERKZEUG_VERSION)
        return False
    return True


def patch() -> None:
    """Apply the fixes (only inside `patches.applied()`, which gates them and takes them out again)."""
    _patch_sqs_models()
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


def _patch_sqs_models() -> None:
    # Two hot spots with the same results, cheaper: moto converts every attribute name with a regex
    # on each access, and re-derives all queue attributes (O(depth)) to read one number for every
    # message it receives.
    import moto.sqs.models as sqs_models

    from .clock import camelcase_to_underscores

    put(sqs_models, "camelcase_to_underscores", camelcase_to_underscores)

    def is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Any) -> bool:
        retention_s = int(self.get_queue(queue_name).message_retention_period)
        return retention_s + message.sent_timestamp / 1000 > sqs_models.unix_time()

    put(sqs_models.SQSBackend, "is_message_valid_based_on_retention_period",
        is_message_valid_based_on_retention_period)


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

    put(Queue, "messages", property(messages))
    put(Queue, "approximate_number_of_messages_delayed", property(approximate_number_of_messages_delayed))
    put(Queue, "approximate_number_of_messages_not_visible",
        property(approximate_number_of_messages_not_visible))
    put(Queue, "delete_message", delete_message)


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
    put(m.SQSBackend, "send_message", send_message)


def _patch_dispatch() -> None:
    import moto.core.responses as responses

    # Called with the response class on every request; a class's functions do not change
    # while the process runs, so the answer can be kept per class.
    put(responses, "method_names_from_class",
        functools.lru_cache(maxsize=None)(responses.method_names_from_class))
