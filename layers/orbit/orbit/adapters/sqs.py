"""Queues on SQS: the decision queue and one worker queue per task queue.

Why a *standard* decision queue and not FIFO with one message group per
execution: FIFO would serialise deciders per execution, but correctness does
not depend on it - the conditional commit on seq (adapters/dynamodb.py) is what
keeps a history from forking, and redeliveries are recognised by message id
(`state.inbound`). FIFO would add cost ($0.50 vs $0.40 per million requests),
cap throughput (300 msg/s per API action without batching; a hot execution's
group is processed one batch at a time) and forbid per-message DelaySeconds,
which we use for short timers. With a standard queue two deciders may race on
one execution; the loser gets ConflictError and reloads (service.Engine).

Bodies larger than `inline_limit` bytes go to the PayloadStore and travel as an
envelope `{"kind", "execution_id", "id", "payload_ref"}`: a 50 MB step result
reaches the decider intact, nothing is truncated. `decode_body` reverses it.
Messages of one execution sent together travel as one `bundle` body
(`bundle`, `decode_bodies`).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from orbit.adapters.payload_values import VALUE_LIMIT, extract, resolve
from orbit.core.history.messages import Bundle, WakeMessage
from orbit.core.tracing import BODY_KEY, TRACE_ATTRIBUTE
from orbit.errors import OrbitError, ValidationError

# SQS accepts 256 KiB (1 MiB since 2025) per message and per batch; stay well below the
# classic limit so attributes and JSON escaping never push a message over it.
INLINE_LIMIT = 200_000
MAX_DELAY_S = 900
REF_KEY = "payload_ref"
REFS_KEY = "payload_refs"
BUNDLE = Bundle.KIND


class QueueError(OrbitError):
    """SQS refused some messages of a batch; the caller must retry (nothing was dropped silently)."""


def encode_body(body: Mapping[str, Any], payloads: Any, inline_limit: int = INLINE_LIMIT) -> str:
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    if len(text.encode()) <= inline_limit:
        return text
    # Large values go to S3 one by one, the same content-addressed objects the history and the
    # worker's dedupe record use (payload_values.py): a 50 MB output is one object for its
    # result message, its commit, the next dispatch and every snapshot. Their refs travel beside
    # the body (`payload_refs`), outside the user's JSON, like `payload_ref` below.
    reduced, refs = extract(dict(body), payloads, VALUE_LIMIT)
    if refs:
        text = json.dumps({**reduced, REFS_KEY: refs}, separators=(",", ":"), ensure_ascii=False)
        if len(text.encode()) <= inline_limit:
            return text
    # No history references a whole body: it goes where the bucket's lifecycle rule removes it.
    ref = getattr(payloads, "put_message", payloads.put)(text.encode())
    # (`waiting_for_worker` too: the local stack reads it from the envelope, see local/clock.py)
    envelope = {k: body[k] for k in ("kind", "execution_id", "id", "unit", "token", "task",
                                     "waiting_for_worker") if k in body}
    envelope[REF_KEY] = ref
    return json.dumps(envelope, separators=(",", ":"))


def decode_body(text: str, payloads: Any) -> dict[str, Any]:
    """Parse a queue body, following an S3 reference; ValidationError if it is not a JSON object."""
    try:
        body = json.loads(text)
    except (TypeError, ValueError) as e:
        raise ValidationError(f"body is not JSON: {e}", "message") from None
    if not isinstance(body, dict):
        raise ValidationError("body must be a JSON object", "message")
    if REF_KEY in body:
        body = json.loads(payloads.get(body[REF_KEY]))
        if not isinstance(body, dict):
            raise ValidationError("referenced body must be a JSON object", "message")
    if REFS_KEY in body:
        refs = body.pop(REFS_KEY)
        where = f"message {body.get('id')!r} of execution {body.get('execution_id')!r}"
        body = resolve(body, refs, payloads, where)
    return body


def decode_bodies(text: str, payloads: Any) -> list[dict[str, Any]]:
    """The inbound messages one decision-queue body carries: itself, or a bundle's messages."""
    body = decode_body(text, payloads)
    if body.get("kind") != BUNDLE:
        return [body]
    return list(Bundle.from_dict(body).messages or ())


def bundle(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One body per execution: several messages of one execution travel as one SQS message.

    Why: a worker's `started` and `result` (or a batch's answers for one execution) must reach
    the decider together to cost one decision and one commit; as one SQS message they always
    do (two messages of a standard queue may come in different receives), and they take one
    SendMessageBatch entry, one slot of the decider's 10-record batch, one receive and delete.
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for m in messages:
        groups.setdefault(str(m.get("execution_id")), []).append(m)
    out: list[dict[str, Any]] = []
    for eid, group in groups.items():
        if len(group) == 1:
            out.append(group[0])
        else:
            out.append(Bundle(eid, f"{BUNDLE}:{group[0].get('id')}", group).to_dict())
    return out


class SqsQueues:
    """The `Queues` port: decision messages and task dispatches."""

    def __init__(
        self,
        client: Any,
        decision_url: str,
        task_urls: Mapping[str, str],
        default_task_url: str,
        payloads: Any,
        inline_limit: int = INLINE_LIMIT,
        clock: Any = None,
        routes: Any = None,
    ) -> None:
        self._sqs = client
        self._routes = routes  # name -> URL of an app's queue (adapters/dynamodb/routes.py), or None
        self._clock = clock
        self.decision_url = decision_url
        self.task_urls = dict(task_urls)
        self.default_task_url = default_task_url
        self._payloads = payloads
        self._inline_limit = inline_limit
        self._local = threading.local()

    @contextmanager
    def batched(self) -> Iterator[None]:
        """Hold this thread's sends and flush them as SendMessageBatch calls on exit.

        A handler wraps one SQS batch in it: the effects of ten decisions (or the
        answers of ten tasks) leave in one request per queue instead of ten. The
        flush runs before the handler reports success, so a failed flush fails
        the whole batch and SQS redelivers it; the commit log re-sends the effects.
        """
        if getattr(self._local, "held", None) is not None:
            yield
            return
        self._local.held = {}
        try:
            yield
        finally:
            held, self._local.held = self._local.held, None
            for (url, delay_s), bodies in held.items():
                self._send_now(url, bodies, delay_s)

    def flush(self) -> None:
        """Send what this thread holds now (a bulk action sends its page before it records the page
        done: service/batches.py); later sends are held again."""
        held = getattr(self._local, "held", None)
        if held:
            self._local.held = {}
            for (url, delay_s), bodies in held.items():
                self._send_now(url, bodies, delay_s)

    def task_url(self, queue: str) -> str:
        """Queue name (task prefix before the first '.') -> URL: the stack's map, then the routes apps
        registered (`Custom::OrbitTaskQueue`); unmapped names use the default queue."""
        mapped = self.task_urls.get(queue)
        if mapped:
            return mapped
        routed = self._routes(queue) if self._routes is not None else None
        return routed or self.default_task_url

    def send_decision(self, message: Any, delay_s: int = 0) -> None:
        self.send_decisions([message], delay_s)

    def send_decisions(self, messages: Iterable[Any], delay_s: int = 0) -> None:
        """Several inbound messages; those of one execution leave as one bundle (`decode_bodies`).

        Each is stamped with `sent_at_ms` (kept when already set, e.g. by a resend): it bounds how
        far back the decider looks for the commit of a redelivery (orbit/outbox.py). It travels in
        the body, not as SQS's SentTimestamp, so it survives a dead-letter redrive unchanged.
        """
        bodies = [_as_dict(m) for m in messages]
        if self._clock is not None:
            now = self._clock.now_ms()
            bodies = [b if "sent_at_ms" in b else {**b, "sent_at_ms": now} for b in bodies]
        self._send(self.decision_url, bundle(bodies), delay_s)

    def send_task(self, queue: str, body: Any, delay_s: int = 0) -> None:
        self._send(self.task_url(queue), [_as_dict(body)], delay_s)

    def _send(self, url: str, bodies: list[dict[str, Any]], delay_s: int) -> None:
        if not 0 <= delay_s <= MAX_DELAY_S:
            raise ValidationError(f"delay {delay_s}s is outside SQS's 0..{MAX_DELAY_S}", "delay_s")
        held = getattr(self._local, "held", None)
        if held is not None:
            held.setdefault((url, delay_s), []).extend(bodies)
            return
        self._send_now(url, bodies, delay_s)

    def _send_now(self, url: str, bodies: list[dict[str, Any]], delay_s: int) -> None:
        # The trace header leaves the body and travels as a message attribute (orbit/core/tracing.py).
        traced = [_without_trace(b) for b in bodies]
        texts = [(encode_body(b, self._payloads, self._inline_limit), trace) for b, trace in traced]
        # SendMessageBatch: 10 entries and INLINE_LIMIT bytes per call (one request instead of ten).
        batch: list[tuple[str, str | None]] = []
        size = 0
        for text, trace in texts:
            n = len(text.encode()) + len(trace or "")
            if batch and (len(batch) == 10 or size + n > self._inline_limit):
                self._send_batch(url, batch, delay_s)
                batch, size = [], 0
            batch.append((text, trace))
            size += n
        if batch:
            self._send_batch(url, batch, delay_s)

    def _send_batch(self, url: str, texts: list[tuple[str, str | None]], delay_s: int) -> None:
        def attrs(trace: str | None) -> dict[str, Any]:
            if not trace:
                return {}
            return {"MessageAttributes": {TRACE_ATTRIBUTE: {"DataType": "String", "StringValue": trace}}}

        if len(texts) == 1:
            text, trace = texts[0]
            self._sqs.send_message(QueueUrl=url, MessageBody=text, DelaySeconds=delay_s, **attrs(trace))
            return
        entries = [{"Id": str(i), "MessageBody": t, "DelaySeconds": delay_s, **attrs(trace)}
                   for i, (t, trace) in enumerate(texts)]
        failed = self._sqs.send_message_batch(QueueUrl=url, Entries=entries).get("Failed") or []
        if failed:
            reasons = ", ".join(f"#{f['Id']}: {f.get('Code')} {f.get('Message', '')}" for f in failed)
            raise QueueError(f"SQS refused {len(failed)} of {len(texts)} messages to {url}: {reasons}")


def _without_trace(body: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """(body without its trace header, the header); a bundle takes its first message's."""
    trace = body.get(BODY_KEY)
    if body.get("kind") == BUNDLE:
        inner = [_without_trace(m) for m in body.get("messages") or []]
        trace = trace or next((t for _, t in inner if t), None)
        body = {**body, "messages": [m for m, _ in inner]}
    body = {k: v for k, v in body.items() if k != BODY_KEY}
    return body, trace if isinstance(trace, str) and trace else None


def trace_of(record: Mapping[str, Any]) -> str | None:
    """The trace header of a received message: a Lambda SQS record or a ReceiveMessage entry."""
    attrs = record.get("messageAttributes") or record.get("MessageAttributes") or {}
    value = attrs.get(TRACE_ATTRIBUTE) or {}
    header = value.get("stringValue") or value.get("StringValue")
    return header if isinstance(header, str) and header else None


def _as_dict(m: Any) -> dict[str, Any]:
    return m.to_dict() if hasattr(m, "to_dict") else dict(m)


class DelayedWakeTimers:
    """Timers port: short timers as delayed `wake` messages, long ones in a table-backed Timers.

    A timer due within SQS's 15-minute DelaySeconds costs one SendMessage and no
    table write, and fires to the second without waiting for the timers
    function's minute tick. The delay is rounded *up*, so the wake never arrives
    before the decider's clock reaches the fire time. The wake id is unique per
    arm: a wake that arrives early (clock skew) and re-arms the same time must
    not be mistaken for a redelivery of the first. `due`, `disarm` and
    `next_fire_ms` see only the long timers (a delayed message cannot be
    recalled; a superseded one costs one decision that finds nothing due).
    """

    def __init__(self, table_timers: Any, queues: SqsQueues, clock: Any,
                 max_delay_s: int = MAX_DELAY_S) -> None:
        self.table = table_timers
        self._queues = queues
        self._clock = clock
        self._max_delay_s = max_delay_s

    def arm(self, execution_id: str, fire_at_ms: int, seq: int | None = None) -> None:
        delay_ms = fire_at_ms - self._clock.now_ms()
        if delay_ms > self._max_delay_s * 1000:
            self.table.arm(execution_id, fire_at_ms, seq)
            return
        delay_s = max(0, -(-delay_ms // 1000))
        wake_id = f"wake:{execution_id}:{fire_at_ms}:{uuid.uuid4().hex[:12]}"
        self._queues.send_decision(WakeMessage(execution_id, wake_id).to_dict(), delay_s)

    def due(self, now_ms: int, limit: int = 100) -> list[tuple[str, int]]:
        result: list[tuple[str, int]] = self.table.due(now_ms, limit)
        return result

    def disarm(self, execution_id: str, fire_at_ms: int | None = None) -> None:
        self.table.disarm(execution_id, fire_at_ms)

    def next_fire_ms(self) -> int | None:
        result: int | None = self.table.next_fire_ms()
        return result
