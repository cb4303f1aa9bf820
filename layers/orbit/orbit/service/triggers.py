"""Events in, executions out: what one trigger does with one event (docs/triggers.md).

`deliver(engine, workflow, trigger, event, key)`:
1. the workflow's newest registered version and its trigger of that name;
2. `when` (false: ignored), then the `id`, `input` and signal payload expressions, all evaluated
   before anything is written, so an expression that fails never starts a half-built execution;
3. a start with the id (the same event again: the same id and input, so the existing execution is
   found and nothing starts twice), or signal-with-start when the trigger names a signal (its
   signal id is derived from the event's own id `key`, so a redelivered event is received once).

A refusal (`TriggerRefused`: an expression failed, an id that does not fit, a retired workflow, an
input or payload refused) is final: the caller sends the event to the trigger dead-letter queue
with the reason (`dead_letter`) and counts it (metric `TriggerDeadLettered`). Anything else (a
throttled table) is raised for the caller to retry.

`sync_triggers` keeps the outside world in step with the registry (rules on EventBridge, event
source mappings for SQS triggers): called after a registration and after a retirement.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any, Protocol

from orbit.core.definition.expressions import ExpressionError, evaluate
from orbit.core.definition.triggers import Trigger, triggers_of
from orbit.core.history.queue_bodies import TriggerDeadLetter
from orbit.core.history.storable import execution_id_problem, value_problem
from orbit.errors import (
    ExecutionEnded,
    ExecutionExists,
    NotFound,
    OrbitError,
    PayloadRefused,
    UnknownWorkflow,
    ValidationError,
    WorkflowRetired,
)

log = logging.getLogger("orbit.service.triggers")
MAX_REASON = 1000


class TriggerRefused(OrbitError):
    """An event this trigger can never start an execution from (a dead letter, not a retry)."""

    code = "TRIGGER_REFUSED"


@dataclass(frozen=True)
class Outcome:
    status: str  # "started" (or found started: a repeat), "signalled", "ignored", "exists"
    execution_id: str | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "execution_id": self.execution_id}
        if self.detail:
            out["detail"] = self.detail
        return out


class TriggerRules(Protocol):
    """Where a trigger's events come from, outside Orbit (adapters/events.py: EventBridge rules)."""

    def sync(self, workflow: str, triggers: dict[str, Trigger], former: dict[str, Trigger]) -> None:
        """Make the workflow's rules exactly these triggers' (none: remove them all); `former`:
        every trigger its versions declared (what may need removing)."""
        ...


class DeadLetters(Protocol):
    def send(self, body: dict[str, Any]) -> None: ...


def find_trigger(engine: Any, workflow: str, trigger: str) -> tuple[Any, Trigger]:
    """The newest registered version of `workflow` and its trigger `trigger` (TriggerRefused: gone)."""
    try:
        wf = engine.registry.get(workflow, None)
    except (UnknownWorkflow, WorkflowRetired, NotFound) as e:
        raise TriggerRefused(f"workflow {workflow!r} cannot start: {e}") from None
    found = triggers_of(wf).get(trigger)
    if found is None:
        raise TriggerRefused(f"workflow {workflow!r} v{wf.version} has no trigger {trigger!r}")
    return wf, found


def deliver(engine: Any, workflow: str, trigger: str, event: Any, key: str) -> Outcome:
    """Start (or signal-with-start) the execution this event names. `key`: the delivery's own
    identity (an EventBridge event id, an SQS message id, a webhook body's digest)."""
    wf, trig = find_trigger(engine, workflow, trigger)
    root = event if isinstance(event, dict) else {"value": event}
    now = engine.clock.now_ms()
    if trig.when is not None and _eval(trig.when, root, now, trig, "when") is not True:
        return Outcome("ignored", None, "`when` was not true")
    eid = _eval(trig.id, root, now, trig, "id")
    if isinstance(eid, (int, float)) and not isinstance(eid, bool):
        eid = str(int(eid)) if float(eid).is_integer() else str(eid)
    problem = (
        execution_id_problem(eid) if isinstance(eid, str) else f"must be a string, not {json.dumps(eid)}"
    )
    if problem:
        raise TriggerRefused(
            f"trigger {trigger!r}: the id expression gave an id that does not fit: {problem}"
        )
    input = _eval(trig.input, root, now, trig, "input")
    _storable(input, trig, "input")
    if trig.debounce is not None or trig.batch is not None:
        return _buffer(engine, wf.name, trig, root, now, eid, input, key)
    try:
        if trig.signal is None:
            engine.start(wf.name, None, input, eid)
            return Outcome("started", eid)
        payload = _eval(trig.signal.get("payload", trig.input), root, now, trig, "signal.payload")
        _storable(payload, trig, "signal.payload")
        from orbit.service.signal_start import signal_with_start

        sid = "trigger:" + hashlib.sha256(f"{wf.name}/{trig.name}/{key}".encode()).hexdigest()[:40]
        res = signal_with_start(engine, eid, wf.name, trig.signal["name"], payload, input, signal_id=sid)
        return Outcome("started" if res["started"] else "signalled", eid)
    except ExecutionExists as e:  # another event already started this id with another input
        return Outcome("exists", eid, str(e))
    except (ValidationError, PayloadRefused, WorkflowRetired, UnknownWorkflow, ExecutionEnded) as e:
        raise TriggerRefused(f"trigger {trigger!r}: {e}") from None


def _buffer(
    engine: Any, workflow: str, trig: Trigger, root: Any, now: int, eid: str, input: Any, key: str
) -> Outcome:
    """A debounced or batched trigger: the event joins its key's buffer (service/trigger_buffers.py)."""
    from orbit.service import trigger_buffers

    expr = (trig.debounce or trig.batch or {}).get("key")
    value = "" if expr is None else _eval(expr, root, now, trig, "key")
    bkey = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
    try:
        status = trigger_buffers.add(engine, workflow, trig, bkey, eid, input, key)
    except trigger_buffers.Refused as e:
        raise TriggerRefused(f"trigger {trig.name!r}: {e}") from None
    return Outcome("buffered" if status == "buffered" else "duplicate", None, f"key {bkey!r}")


def dead_letter_body(workflow: str, trigger: str, reason: str, event: Any) -> dict[str, Any]:
    """What the trigger dead-letter queue receives: enough to see why and to send it again."""
    return TriggerDeadLetter(workflow, trigger, reason[:MAX_REASON], event).to_dict()


def sync_triggers(engine: Any, workflow: str) -> None:
    """After a registration or a retirement: the workflow's newest active version's triggers are the
    ones that exist outside (none when every version is retired); the triggers of its other versions
    are removed. No-op without adapters."""
    sources = [getattr(engine, "trigger_rules", None), getattr(engine, "trigger_sources", None)]
    if not any(sources):
        return
    try:
        wanted = triggers_of(engine.registry.get(workflow, None))
    except (UnknownWorkflow, WorkflowRetired, NotFound):
        wanted = {}
    former: dict[str, Trigger] = {}
    for wf in engine.workflows():
        if wf.get("name") != workflow:
            continue
        for v in wf.get("versions", []):
            for build in v.get("builds", []):
                try:
                    held = engine.registry.get_build(workflow, v["version"], build)
                except Exception:  # noqa: BLE001 - not held here: its triggers are unknown
                    continue
                for name, trig in triggers_of(held).items():
                    former.setdefault(f"{name}@{trig.bus}", trig)
    for source in sources:
        if source is not None:
            source.sync(workflow, wanted, {k: t for k, t in former.items()})


def _eval(template: Any, root: Any, now: int, trig: Trigger, what: str) -> Any:
    try:
        return evaluate(template, root, now)
    except ExpressionError as e:
        raise TriggerRefused(f"trigger {trig.name!r}: its {what} expression failed: {e}") from None


def _storable(value: Any, trig: Trigger, what: str) -> None:
    problem = value_problem(value, what)
    if problem:
        raise TriggerRefused(
            f"trigger {trig.name!r}: its {what} is not JSON data that can be stored: {problem}"
        )
