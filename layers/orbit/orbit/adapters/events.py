"""The one adapter for Amazon EventBridge (rules and targets): a trigger's rule (docs/triggers.md).

Each eventbridge or s3 trigger is one rule on its bus, named `{prefix}-{digest}` (the prefix is the
stack's, so the API's role may touch only these rules; the digest is of `workflow/trigger`, so a
name always fits EventBridge's 64 characters) and described `orbit trigger WORKFLOW/TRIGGER`.
Its one target is the stack's trigger queue, with an input transformer that wraps the event as
`{"orbit_trigger": {"workflow", "trigger"}, "event": <the event>}`, a retry policy and the
trigger dead-letter queue for what EventBridge cannot deliver.

`sync(workflow, triggers, former)` makes the workflow's rules exactly these: created or updated
(PutRule and PutTargets are idempotent), and the rule of every trigger an older version declared
that is no longer wanted removed (by its computed name and bus).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from orbit.core.definition.triggers import Trigger

TARGET_ID = "orbit"
MAX_EVENT_AGE_S = 86_400
MAX_RETRIES = 185


def rule_name(prefix: str, workflow: str, trigger: str) -> str:
    return f"{prefix}-{hashlib.sha256(f'{workflow}/{trigger}'.encode()).hexdigest()[:20]}"


def description(workflow: str, trigger: str) -> str:
    return f"orbit trigger {workflow}/{trigger}"


def target_input(workflow: str, trigger: str) -> str:
    head = json.dumps({"workflow": workflow, "trigger": trigger}, separators=(",", ":"))
    return '{"orbit_trigger":' + head + ',"event":<aws.events.event.json>}'


class EventBridgeRules:
    """`client()`: an EventBridge (`events`) client; `prefix`: the stack's rule-name prefix."""

    def __init__(self, client: Callable[[], Any], prefix: str, target_arn: str, dlq_arn: str) -> None:
        self._client, self.prefix, self.target_arn, self.dlq_arn = client, prefix, target_arn, dlq_arn

    def sync(
        self, workflow: str, triggers: dict[str, Trigger], former: dict[str, Trigger] | None = None
    ) -> None:
        """`triggers`: the rules the workflow must have now; `former`: every trigger any of its
        versions declared, so a rule no longer wanted (another bus, a trigger dropped, every
        version retired) is removed by its computed name: no List call, so the API's role needs
        no permission beyond this stack's rule names."""
        events = self._client()
        wanted: set[tuple[str, str]] = set()
        for trig in triggers.values():
            pattern = trig.pattern()
            if pattern is None:
                continue
            name = rule_name(self.prefix, workflow, trig.name)
            wanted.add((trig.bus, name))
            events.put_rule(
                Name=name,
                EventBusName=trig.bus,
                EventPattern=json.dumps(pattern),
                State="ENABLED",
                Description=description(workflow, trig.name),
            )
            events.put_targets(
                Rule=name,
                EventBusName=trig.bus,
                Targets=[
                    {
                        "Id": TARGET_ID,
                        "Arn": self.target_arn,
                        "InputTransformer": {
                            "InputPathsMap": {},
                            "InputTemplate": target_input(workflow, trig.name),
                        },
                        "RetryPolicy": {
                            "MaximumRetryAttempts": MAX_RETRIES,
                            "MaximumEventAgeInSeconds": MAX_EVENT_AGE_S,
                        },
                        "DeadLetterConfig": {"Arn": self.dlq_arn},
                    }
                ],
            )
        for trig in (former or {}).values():
            name = rule_name(self.prefix, workflow, trig.name)
            if trig.pattern() is None or (trig.bus, name) in wanted:
                continue
            try:
                events.remove_targets(Rule=name, EventBusName=trig.bus, Ids=[TARGET_ID])
                events.delete_rule(Name=name, EventBusName=trig.bus)
            except events.exceptions.ResourceNotFoundException:
                pass  # removed before (a retried retirement), or never created

    def put_event(self, bus: str, source: str, detail_type: str, detail: Any) -> dict[str, Any]:
        """Send one event (`orbit events put`): {"event_id"} or {"error"}."""
        return put_event(self._client(), bus, source, detail_type, detail)


def put_event(events: Any, bus: str, source: str, detail_type: str, detail: Any) -> dict[str, Any]:
    """PutEvents of one event on `events` (a client): {"event_id"} or {"error": why}."""
    got = events.put_events(
        Entries=[
            {"EventBusName": bus, "Source": source, "DetailType": detail_type, "Detail": json.dumps(detail)}
        ]
    )
    entry = (got.get("Entries") or [{}])[0]
    if entry.get("EventId"):
        return {"event_id": entry["EventId"]}
    return {"error": f"{entry.get('ErrorCode', 'refused')}: {entry.get('ErrorMessage', '')}".strip()}
