"""What users see of flow control (docs/flow-control.md): the limits with their use now (`orbit
limits`, `GET /limits`), and for a waiting execution or step the limit, its key, its place in
line and the current holders (`describe`)."""

from __future__ import annotations

from typing import Any

from orbit.core.flow.gates import Slot, attempt_gate, start_holder
from orbit.core.flow.order import Counter
from orbit.core.flow.spec import FlowSpec
from orbit.core.history.state import SCHEDULED, ExecutionState

MAX_SHOWN = 20  # holders listed per limit
MAX_LINE = 1000  # items read to find a place in line


def limits_report(store: Any) -> dict[str, Any]:
    """Every concurrency counter (held, waiting, by priority) and token bucket of the deployment."""
    rows = []
    for c in sorted(store.list_counters(), key=lambda c: c.scope):
        by_priority: dict[str, int] = {}
        for (p, _), n in c.waiting.items():
            by_priority[str(p)] = by_priority.get(str(p), 0) + n
        rows.append(
            {
                "limit": c.name,
                "key": c.key,
                "max": c.limit,
                "held": len(c.holders),
                "holders": sorted(c.holders)[:MAX_SHOWN],
                "waiting": c.waiting_total,
                "waiting_by_priority": by_priority,
            }
        )
    buckets = store.list_buckets() if hasattr(store, "list_buckets") else []
    return {"limits": rows, "rates": buckets}


def _place(
    store: Any, c: Counter | None, scope: str, holder: str, ticket: dict[str, Any]
) -> dict[str, Any]:
    line = store.line(scope, MAX_LINE)
    place = next((i + 1 for i, row in enumerate(line) if row["holder"] == holder), None)
    return {
        "limit": c.name if c else "",
        "key": c.key if c else "",
        "max": c.limit if c else None,
        "place": place,
        "waiting": c.waiting_total if c else None,
        "holders": sorted(c.holders)[:MAX_SHOWN] if c else [],
        "priority": ticket.get("priority"),
        "tenant": ticket.get("tenant") or None,
        "since_ms": ticket.get("since_ms"),
    }


def waiting_start(store: Any, execution_id: str) -> dict[str, Any] | None:
    """A start that waits in line (no execution exists yet): the describe shape, else None."""
    holder = start_holder(execution_id)
    scope = store.where(holder)
    ticket = store.ticket(scope, holder) if scope else None
    if ticket is None or ticket.get("granted_ms") is not None:
        dropped = store.dropped(holder)
        if dropped is None:
            return None
        return {"id": execution_id, "status": "DROPPED", "dropped": dropped}
    body = (ticket.get("send") or {}).get("body") or {}
    info = _place(store, store.read(scope), str(scope), holder, ticket)
    return {
        "id": execution_id,
        "workflow": body.get("workflow"),
        "version": body.get("version") or "",
        "status": "WAITING",
        "input": body.get("input"),
        "steps": {},
        "flow": info,
        "created_at_ms": None,
        "finished_at_ms": None,
    }


def waiting_steps(store: Any, spec: FlowSpec, state: ExecutionState) -> dict[str, dict[str, Any]]:
    """unit -> where it waits, for each queued unit of `state` whose task or queue is limited."""
    out: dict[str, dict[str, Any]] = {}
    if not spec.tasks and not spec.queues:
        return out
    for unit in state.active:
        u = state.units.get(unit)
        if u is None or u.status != SCHEDULED or u.inline is not None or not u.task:
            continue
        gate = attempt_gate(spec, state.id, unit, u.attempt, u.task, u.queue, u.input, u.flow_key, u.priority)
        for slot in gate.slots if gate is not None else ():
            info = _slot_wait(store, slot, gate.holder) if gate is not None else None
            if info is not None:
                out[unit] = info
                break
    return out


def _slot_wait(store: Any, slot: Slot, holder: str) -> dict[str, Any] | None:
    ticket = store.ticket(slot.scope, holder)
    if ticket is None or ticket.get("granted_ms") is not None:
        return None
    return _place(store, store.read(slot.scope), slot.scope, holder, ticket)


def waiting_line(info: dict[str, Any]) -> str:
    """One line for the CLI and describe's step `waiting`."""
    key = f" key {info['key']!r}" if info.get("key") else ""
    place = (
        f"place {info['place']} of {info['waiting']}" if info.get("place") else f"{info['waiting']} waiting"
    )
    return (
        f"waiting for limit {info['limit']!r}{key} ({info['max']} at once): {place}; "
        f"held by {', '.join(info['holders']) or 'nobody'}"
    )
