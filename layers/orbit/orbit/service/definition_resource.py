"""CloudFormation custom resources an app's template declares (docs/deploying.md):

- `Custom::OrbitDefinition` {Definition: YAML or JSON text}: Create registers it, Update registers
  the new text (a new version, or a new build of the same one: running executions stay on the build
  they started with), Delete retires `name@version` (new starts refused, running executions finish).
  PhysicalResourceId is `name@version`: an Update that changes the name or version gets a new id, and
  CloudFormation's clean-up Delete then retires the old version.
- `Custom::OrbitTaskQueue` {Name, QueueUrl}: tasks `<Name>.*` go to the app's queue (adapters/
  dynamodb/routes.py); the queue's name must start with the Orbit stack's app prefix, which is all
  the decider may send to (template.yaml). Delete removes the route.

A definition that does not validate is answered FAILED with the validation error, so the app's stack
rolls back. Replays of a request (Lambda retries an asynchronous invocation that crashed) are safe:
a request already answered is answered again with the recorded response, and a registration is
skipped when the name's latest version already is that build, so a crash between registering and
answering never registers twice.

Pure of AWS: the registry, routes, request records and `respond` (the HTTP PUT) are passed in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orbit.errors import OrbitError, UnknownWorkflow, WorkflowRetired

DEFINITION = "Custom::OrbitDefinition"
TASK_QUEUE = "Custom::OrbitTaskQueue"
REASON_LIMIT = 1500  # a response body is at most 4 KB


class ResourceFailed(Exception):
    """The request cannot be done: answered FAILED with this reason."""


def handle(event: dict[str, Any], engine: Any, routes: Any, requests: Any,
           respond: Callable[[str, dict[str, Any]], None], queue_prefix: str = "") -> dict[str, Any]:
    """Answer one CloudFormation request; returns the response sent to its ResponseURL."""
    request_id = str(event.get("RequestId") or "")
    done = requests.answered(request_id) if request_id else None
    if done is not None:
        respond(str(event["ResponseURL"]), done)  # a replay: the same answer again, nothing redone
        return done
    kind = str(event.get("RequestType") or "")
    old_id = str(event.get("PhysicalResourceId") or "")
    where = f"{event.get('ResourceType', '?')} {event.get('LogicalResourceId', '?')}"
    try:
        if event.get("ResourceType") == DEFINITION:
            physical, data = _definition(kind, event.get("ResourceProperties") or {}, old_id, engine)
        elif event.get("ResourceType") == TASK_QUEUE:
            physical, data = _task_queue(kind, event, old_id, routes, queue_prefix)
        else:
            raise ResourceFailed(f"unknown resource type (Orbit serves {DEFINITION} and {TASK_QUEUE})")
        status, reason = "SUCCESS", ""
    except (ResourceFailed, OrbitError) as exc:
        # a failed Create still needs an id: CloudFormation deletes it on rollback (a no-op here)
        physical, data = old_id or f"failed:{request_id}", {}
        status, reason = "FAILED", f"{where}: {exc}"[:REASON_LIMIT]
    response = {"Status": status, "Reason": reason, "PhysicalResourceId": physical,
                "StackId": event.get("StackId"), "RequestId": request_id,
                "LogicalResourceId": event.get("LogicalResourceId"), "Data": data}
    if request_id:
        requests.record(request_id, response)
    respond(str(event["ResponseURL"]), response)
    return response


def _definition(kind: str, props: dict[str, Any], old_id: str, engine: Any) -> tuple[str, dict[str, Any]]:
    if kind == "Delete":
        name, at, version = old_id.rpartition("@")
        if at and name:
            try:
                engine.registry.retire(name, version)
            except UnknownWorkflow:
                pass  # never registered (or its table was replaced): nothing to retire
            from orbit.service.triggers import sync_triggers

            sync_triggers(engine, name)  # docs/triggers.md: the last version retired removes its rules
        return old_id, {}
    if kind not in ("Create", "Update"):
        raise ResourceFailed(f"unknown RequestType {kind!r}")
    text = props.get("Definition")
    if not isinstance(text, str) or not text.strip():
        raise ResourceFailed("Properties.Definition: must be the definition's YAML or JSON text")
    from orbit.core.definition import load_definition
    from orbit.service.registration_checks import check_registration

    definition = load_definition(text)  # ValidationError: FAILED, the stack rolls back
    check_registration(engine, definition)
    if not _is_latest(engine.registry, definition):
        engine.registry.register(definition)
    from orbit.service.triggers import sync_triggers

    sync_triggers(engine, definition.name)  # idempotent: a replayed request syncs again
    return f"{definition.name}@{definition.version}", {
        "Name": definition.name, "Version": str(definition.version), "Hash": definition.hash}


def _is_latest(registry: Any, definition: Any) -> bool:
    """The name's latest version is this very build, not retired: registering again would change
    nothing (a replayed request after a crash that followed the registration)."""
    try:
        current = registry.get(definition.name)
    except (UnknownWorkflow, WorkflowRetired):
        return False
    return bool(str(current.version) == str(definition.version)
                and getattr(current, "hash", None) == definition.hash)


def _task_queue(kind: str, event: dict[str, Any], old_id: str, routes: Any,
                prefix: str) -> tuple[str, dict[str, Any]]:
    if kind == "Delete":
        old_name, _, old_url = old_id.partition("=")
        if old_name and old_url:
            routes.delete(old_name, old_url)
        return old_id, {}
    props = event.get("ResourceProperties") or {}
    name, url = props.get("Name"), props.get("QueueUrl")
    if not isinstance(name, str) or not name or "." in name or "=" in name:
        raise ResourceFailed("Properties.Name: must be the task prefix the queue serves (no '.' or '=')")
    if not isinstance(url, str) or "://" not in url:
        raise ResourceFailed("Properties.QueueUrl: must be the queue's URL (!Ref of an AWS::SQS::Queue)")
    queue_name = url.rstrip("/").rsplit("/", 1)[-1]
    if prefix and not queue_name.startswith(prefix):
        raise ResourceFailed(f"Properties.QueueUrl: queue {queue_name!r} must be named {prefix}...: "
                             "Orbit's decider may send only to queues with that prefix")
    routes.put(name, url)  # an Update to another name or URL: the clean-up Delete removes the old one
    return f"{name}={url}", {"Name": name, "QueueUrl": url}
