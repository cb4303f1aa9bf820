"""What a start or an attempt must pass (its `Gate`), and which holders a commit gives back.

Pure: both are functions of the workflow's FlowSpec and of what a decision produced or recorded
(a `DispatchTask` effect, a start message, the commit's events), so a redelivered message derives
exactly the same acquisitions and releases again, and the stores make both idempotent by holder
id (`x:<execution>` for a start, `a:<execution>|<unit>|<attempt>` for an attempt).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from orbit.core.flow.spec import DEFAULT_PRIORITY, Concurrency, FlowSpec, Gates, Rate

SAFE_KEY = re.compile(r"[A-Za-z0-9_.:@/+=-]{0,128}")
ERROR_KEY = "!error"  # a key expression that failed: its items share this key (docs/flow-control.md)


@dataclass(frozen=True)
class Slot:
    """One concurrency counter a holder takes: `scope` is the counter's id (limit name + key)."""

    scope: str
    name: str  # the limit: `workflow:<name>`, `task:<name>`, `queue:<name>`
    key: str  # the key's value as shown (at most 128 characters)
    limit: int
    fairness: str = ""  # the waiting item's tenant under this limit
    weight: int = 1


@dataclass(frozen=True)
class Bucket:
    """One token bucket: `rate` tokens per `period_ms`, holding at most `burst`."""

    scope: str
    name: str
    key: str
    rate: int
    period_ms: int
    burst: int
    on_exceed: str


@dataclass(frozen=True)
class Gate:
    holder: str
    slots: tuple[Slot, ...]
    bucket: Bucket | None
    priority: int

    def to_dict(self) -> dict[str, Any]:
        return {"holder": self.holder, "priority": self.priority,
                "slots": [s.__dict__ for s in self.slots],
                "bucket": None if self.bucket is None else self.bucket.__dict__}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Gate:
        b = d.get("bucket")
        return cls(str(d["holder"]), tuple(Slot(**s) for s in d.get("slots") or ()),
                   Bucket(**b) if isinstance(b, dict) else None, int(d.get("priority", DEFAULT_PRIORITY)))


def start_holder(execution_id: str) -> str:
    return f"x:{execution_id}"


def attempt_holder(execution_id: str, unit: str, attempt: int) -> str:
    return f"a:{execution_id}|{unit}|{attempt}"


def key_value(expr: Any, value: Any) -> str:
    """The key of `value` under `expr` (a template over {"input": value} or a function of it); the
    same value always gives the same key (no clock: `$now` is fixed at 0)."""
    if expr is None:
        return ""
    try:
        if callable(expr):
            got = expr(value)
        else:
            from orbit.core.definition.expressions import evaluate

            got = evaluate(expr, {"input": value}, 0)
    except Exception:  # noqa: BLE001 - a key that cannot be computed shares ERROR_KEY
        return ERROR_KEY
    if got is None:
        return ""
    text = got if isinstance(got, str) else json.dumps(got, sort_keys=True, separators=(",", ":"))
    return text


def _safe(text: str) -> str:
    """A key as it goes into a table key: itself when short and plain, else a hash of it."""
    if SAFE_KEY.fullmatch(text):
        return text
    return "h:" + hashlib.sha256(text.encode()).hexdigest()[:32]


def _priority(expr: Any, value: Any) -> int:
    if expr is None:
        return DEFAULT_PRIORITY
    if isinstance(expr, int):
        return expr
    got = key_value(expr, value)
    return int(got) if got in ("1", "2", "3", "4", "5") else DEFAULT_PRIORITY


def _slot(name: str, c: Concurrency, value: Any, given: str | None = None) -> Slot:
    key = given if given is not None else key_value(c.key, value)
    fair = key_value(c.fairness_key, value) if c.fairness_key is not None else ""
    return Slot(f"{name}|{_safe(key)}", name, key[:128], c.limit, _safe(fair),
                c.weights.get(fair, 1))


def _bucket(name: str, r: Rate, value: Any, given: str | None = None) -> Bucket:
    key = given if given is not None else key_value(r.key, value)
    return Bucket(f"{name}|{_safe(key)}", name, key[:128], r.limit, r.period_ms, r.burst, r.on_exceed)


def _gate(holder: str, name: str, g: Gates | None, value: Any, extra: tuple[Slot, ...] = (),
          key: str | None = None, priority: int | None = None) -> Gate | None:
    """`key` / `priority`: the call's own (a step's `key=`, a start's `priority`), else declared."""
    own: tuple[Slot, ...] = ((_slot(name, g.concurrency, value, key),)
                             if g is not None and g.concurrency else ())
    slots = own + extra
    bucket = _bucket(name, g.rate, value, key) if g is not None and g.rate is not None else None
    if not slots and bucket is None:
        return None
    if priority is not None:
        return Gate(holder, slots, bucket, priority)
    return Gate(holder, slots, bucket, _priority(g.priority if g is not None else None, value))


def start_gate(spec: FlowSpec, workflow: str, execution_id: str, value: Any,
               priority: int | None = None) -> Gate | None:
    """The gate of a start of `workflow` with input `value` (and the start's own `priority`, which
    overrides the declared one); None: it runs at once (no request)."""
    if spec.workflow.empty:
        return None
    return _gate(start_holder(execution_id), f"workflow:{workflow}", spec.workflow, value, priority=priority)


def attempt_gate(spec: FlowSpec, execution_id: str, unit: str, attempt: int, task: str, queue: str,
                 value: Any, key: str | None = None, priority: int | None = None) -> Gate | None:
    """The gate of one attempt of `task` on `queue`: the task's slot first, then the queue's.
    `key` / `priority`: the call's own (recorded in its StepScheduled), else the declared ones."""
    g = spec.tasks.get(task)
    q = spec.queues.get(queue)
    extra = (Slot(f"queue:{queue}|", f"queue:{queue}", "", q),) if q is not None else ()
    if (g is None or g.empty) and not extra:
        return None
    return _gate(attempt_holder(execution_id, unit, attempt), f"task:{task}", g, value, extra, key, priority)


_ATTEMPT_ENDS = ("StepSucceeded", "StepAttemptFailed", "StepAttemptUncertain")
_UNIT_ENDS = ("StepFailed", "StepCancelled")
_WORKFLOW_ENDS = ("WorkflowCompleted", "WorkflowFailed", "WorkflowCancelled", "WorkflowTimedOut",
                  "WorkflowContinuedAsNew")


def released(spec: FlowSpec, state: Any, events: Iterable[Any]) -> list[Gate]:
    """The gates whose holders a commit of `events` (already folded into `state`) gives back: an
    attempt that succeeded, failed, became uncertain or was cancelled; the execution itself when it
    ended or continued as new. Each at most once per commit."""
    if spec.empty:
        return []
    out: dict[str, Gate] = {}
    ended: set[str] = set()
    for rec in events:
        e = getattr(rec, "event", rec)
        kind = type(e).__name__
        if kind in _WORKFLOW_ENDS:
            g = start_gate(spec, state.workflow, state.id, state.input)
            if g is not None and g.slots:
                out.setdefault(g.holder, g)
            continue
        step = getattr(e, "step", None)
        if step is None or (kind not in _ATTEMPT_ENDS and kind not in _UNIT_ENDS):
            continue
        u = state.units.get(step)
        if u is None or not u.task or u.inline is not None:  # inline steps are not gated
            continue
        attempts = [getattr(e, "attempt", u.attempt)] if kind in _ATTEMPT_ENDS else [u.attempt]
        if kind in _UNIT_ENDS and step in ended:
            continue  # its attempt's end in this commit already gave the slot back
        reconciled = getattr(e, "reconciled_attempt", None)
        if reconciled:
            attempts.append(reconciled)
        ended.add(step)
        for attempt in attempts:
            g = attempt_gate(spec, state.id, step, int(attempt or 0), u.task, u.queue, u.input,
                             u.flow_key, u.priority)
            if g is not None and g.slots:
                out.setdefault(g.holder, g)
    return list(out.values())
