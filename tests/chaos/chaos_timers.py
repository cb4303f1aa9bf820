"""Timers on the second under delivery chaos (docs/decisions/timers-on-the-second.md).

With `Profile.on_the_second` the world runs as AWS does by default: `ORBIT_TIMERS=sqs-delay` and a
15-minute lead, so short timers are delayed SQS messages and the timers function hands each table
timer to SQS, delayed to its second, once it is due within the lead. moto's SQS runs on wall time,
so the model holds the delays: `Delays` takes DelaySeconds off each send the handlers make and
remembers it by body; the world's `collect()` makes the message visible that much later. The
faults then reach the wakes like any message (duplicates in a batch, late copies, lost deletes,
throttled sends), and one more: an *early* copy of a delayed message (`Profile.dup_early`),
visible 1 to 60 s before its time, as a clock that runs ahead or a wake armed twice would give.
A wake that comes early, twice, or late must change nothing but the timing.
"""

from __future__ import annotations

from typing import Any

LEAD_S = 900


class Delays:
    """DelaySeconds of the handlers' sends, held by the model instead of moto."""

    def __init__(self) -> None:
        self.by_body: dict[str, list[int]] = {}

    def _keep(self, entry: dict[str, Any]) -> None:
        delay = int(entry.pop("DelaySeconds", 0) or 0)
        if delay:
            self.by_body.setdefault(str(entry.get("MessageBody")), []).append(delay)

    def on_send(self, params: dict[str, Any], **_: Any) -> None:
        self._keep(params)

    def on_batch(self, params: dict[str, Any], **_: Any) -> None:
        for entry in params.get("Entries") or []:
            self._keep(entry)

    def take(self, body: str) -> int:
        """The delay (s) the first unclaimed send of `body` asked for; 0 if none."""
        held = self.by_body.get(body)
        if not held:
            return 0
        delay = held.pop(0)
        if not held:
            del self.by_body[body]
        return delay

    def attach(self, sqs: Any) -> None:
        sqs.meta.events.register("provide-client-params.sqs.SendMessage", self.on_send)
        sqs.meta.events.register("provide-client-params.sqs.SendMessageBatch", self.on_batch)

    def detach(self, sqs: Any) -> None:
        sqs.meta.events.unregister("provide-client-params.sqs.SendMessage", self.on_send)
        sqs.meta.events.unregister("provide-client-params.sqs.SendMessageBatch", self.on_batch)


DELAYS = Delays()
