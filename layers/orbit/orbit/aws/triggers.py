"""The triggers function: SQS records in, starts out (docs/triggers.md).

Two kinds of record reach it:
- from the stack's trigger queue: an EventBridge event a trigger's rule matched, wrapped by the
  rule's input transformer as `{"orbit_trigger": {"workflow", "trigger"}, "event": ...}`;
- from a queue an sqs trigger names (its event source mapping): one message, one event
  `{body, message_id, attributes, message_attributes, queue}` for each trigger reading that queue.

A record a trigger refuses (service/triggers.py `TriggerRefused`: an expression failed, an id that
does not fit...) goes to the trigger dead-letter queue with the reason, is counted
(`TriggerDeadLettered`) and is not retried; any other failure is a partial batch failure, retried
by SQS (and after the source queue's maxReceiveCount, its own redrive). `attach` wires the
adapters onto an engine from the environment.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

log = logging.getLogger("orbit.aws.triggers")


def attach(services: Any, engine: Any, env: Mapping[str, str] | None = None) -> None:
    """The trigger adapters from the environment template.yaml sets (none set: none attached)."""
    env = os.environ if env is None else env
    from orbit.adapters.secrets import SecretsManagerWebhookSecrets

    engine.webhook_secrets = SecretsManagerWebhookSecrets(lambda: services.secretsmanager)
    queue_arn, dlq_arn, dlq_url = (
        env.get("ORBIT_TRIGGER_QUEUE_ARN", ""),
        env.get("ORBIT_TRIGGER_DLQ_ARN", ""),
        env.get("ORBIT_TRIGGER_DLQ_URL", ""),
    )
    if dlq_url:
        from orbit.adapters.sqs_dead_letters import SqsDeadLetters

        engine.trigger_dead_letters = SqsDeadLetters(lambda: services.sqs, dlq_url)
    queue_url = env.get("ORBIT_TRIGGER_QUEUE_URL", "")
    if queue_url:  # debounce and batch: buffers in the table, checks on the trigger queue
        from orbit.adapters.dynamodb.trigger_buffers import DynamoTriggerBuffers
        from orbit.adapters.sqs_trigger_checks import SqsTriggerChecks

        engine.trigger_buffers = DynamoTriggerBuffers(services.dynamodb, services.settings.table)
        engine.trigger_checks = SqsTriggerChecks(lambda: services.sqs, queue_url)
    prefix = env.get("ORBIT_TRIGGER_RULE_PREFIX", "")
    if queue_arn and dlq_arn and prefix:
        from orbit.adapters.events import EventBridgeRules

        engine.trigger_rules = EventBridgeRules(
            lambda: _client(services, "events"), prefix, queue_arn, dlq_arn
        )
    function_arn = env.get("ORBIT_TRIGGERS_FUNCTION_ARN", "")
    if function_arn:
        from orbit.adapters.event_sources import LambdaEventSources

        engine.trigger_sources = LambdaEventSources(
            lambda: _client(services, "lambda"), function_arn, lambda: sqs_trigger_queues(engine),
            lambda: services.sqs, env.get("ORBIT_TRIGGER_QUEUE_NAME_PREFIX", ""),
        )


def _client(services: Any, name: str) -> Any:
    cache = services.__dict__.setdefault("_trigger_clients", {})
    if name not in cache:
        cache[name] = services._client(name)
    return cache[name]


def sqs_trigger_queues(engine: Any) -> set[str]:
    """Every queue ARN an active workflow's sqs trigger names."""
    return {arn for _, _, arn in _sqs_triggers(engine)}


def _sqs_triggers(engine: Any) -> list[tuple[str, str, str]]:
    from orbit.core.definition.triggers import triggers_of

    out = []
    for wf in engine.workflows():
        current = _current(engine, wf["name"])
        if current is None:
            continue
        for trig in triggers_of(current).values():
            if trig.kind == "sqs":
                out.append((wf["name"], trig.name, str(trig.config["queue_arn"])))
    return out


def _current(engine: Any, name: str) -> Any:
    """The workflow's newest active version; None when retired or gone. Any other failure (a
    throttled read) is raised: the record is retried, never dead-lettered as "no trigger" (a
    delivery-chaos finding, docs/decisions/trig3-triggers-under-chaos.md)."""
    from orbit.errors import NotFound, UnknownWorkflow, WorkflowRetired

    try:
        return engine.registry.get(name, None)
    except (UnknownWorkflow, WorkflowRetired, NotFound):
        return None


def handle_records(engine: Any, event: Mapping[str, Any], trigger_queue_arn: str) -> dict[str, Any]:
    """One SQS batch: {"batchItemFailures": [{"itemIdentifier": message id}...]} (retried ones)."""
    failures = []
    readers: dict[str, list[tuple[str, str]]] | None = None
    for record in event.get("Records", []):
        mid = str(record.get("messageId", ""))
        source = str(record.get("eventSourceARN", ""))
        try:
            if source == trigger_queue_arn or not source:
                _from_rule(engine, record)
            else:
                if readers is None:  # assigned only once read in full: a throttled read fails this
                    found: dict[str, list[tuple[str, str]]] = {}  # record, and the next reads again
                    for workflow, trigger, arn in _sqs_triggers(engine):
                        found.setdefault(arn, []).append((workflow, trigger))
                    readers = found
                _from_queue(engine, record, readers.get(source, []))
        except Exception:
            log.exception("trigger record %s from %s failed: retried", mid, source)
            failures.append({"itemIdentifier": mid})
    return {"batchItemFailures": failures}


def _from_rule(engine: Any, record: Mapping[str, Any]) -> None:
    try:
        body = json.loads(record.get("body") or "")
        if isinstance(body, dict) and isinstance(body.get("orbit_buffer"), dict):  # a buffer's check
            from orbit.service.trigger_buffers import check_due

            check_due(engine, body["orbit_buffer"])
            return
        if isinstance(body, dict) and "orbit_trigger" not in body and "detail-type" in body:
            _unwrapped(engine, body, str(record.get("messageId", "")))
            return
        head, ev = body["orbit_trigger"], body["event"]
        workflow, trigger = str(head["workflow"]), str(head["trigger"])
    except (ValueError, KeyError, TypeError) as e:
        _dead(
            engine, "", "", f"not an event a trigger's rule sent: {type(e).__name__}: {e}", record.get("body")
        )
        return
    key = str(ev.get("id") if isinstance(ev, dict) and ev.get("id") else record.get("messageId", ""))
    _deliver(engine, workflow, trigger, ev, key)


def _unwrapped(engine: Any, ev: dict[str, Any], mid: str) -> None:
    """An EventBridge event that reached the trigger queue without the rule's input transformer
    (moto's S3 notifications skip it): every active trigger whose pattern matches takes it."""
    from orbit.core.definition.event_patterns import matches
    from orbit.core.definition.triggers import triggers_of

    taken = False
    for wf in engine.workflows():
        current = _current(engine, wf["name"])
        if current is None:
            continue
        for trig in triggers_of(current).values():
            pattern = trig.pattern()
            if pattern is not None and matches(pattern, ev):
                taken = True
                _deliver(engine, wf["name"], trig.name, ev, str(ev.get("id") or mid))
    if not taken:
        log.info("event %s matched no active trigger: ignored", ev.get("id"))


def _from_queue(engine: Any, record: Mapping[str, Any], readers: list[tuple[str, str]]) -> None:
    text = str(record.get("body") or "")
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = text
    ev = {
        "body": body,
        "message_id": record.get("messageId"),
        "queue": record.get("eventSourceARN"),
        "attributes": dict(record.get("attributes") or {}),
        "message_attributes": {
            k: v.get("stringValue")
            for k, v in (record.get("messageAttributes") or {}).items()
            if isinstance(v, dict)
        },
    }
    if not readers:
        _dead(engine, "", "", f"no active workflow has an sqs trigger on {record.get('eventSourceARN')}", ev)
        return
    for workflow, trigger in readers:
        _deliver(engine, workflow, trigger, ev, str(record.get("messageId", "")))


def _deliver(engine: Any, workflow: str, trigger: str, ev: Any, key: str) -> None:
    from orbit.service.triggers import TriggerRefused, deliver

    try:
        outcome = deliver(engine, workflow, trigger, ev, key)
    except TriggerRefused as e:
        _dead(engine, workflow, trigger, str(e), ev)
        return
    log.info("trigger %s/%s: %s %s", workflow, trigger, outcome.status, outcome.execution_id or "")


def _dead(engine: Any, workflow: str, trigger: str, reason: str, ev: Any) -> None:
    """Final: to the trigger dead-letter queue with the reason, counted. Without a queue (a test
    engine), raised so the event is retried rather than dropped."""
    from orbit.service.triggers import TriggerRefused, dead_letter_body

    dead = getattr(engine, "trigger_dead_letters", None)
    if dead is None:
        raise TriggerRefused(reason)
    dead.send(dead_letter_body(workflow, trigger, reason, ev))
    log.warning("trigger %s/%s refused an event: %s", workflow, trigger, reason)
    meter = getattr(engine, "meter", None)
    if meter is not None:
        if workflow:
            meter.count_workflow(workflow, "TriggerDeadLettered")
        meter.count("TriggerDeadLettered")
