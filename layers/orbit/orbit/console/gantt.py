"""An execution's history as Gantt rows for the console's timeline: one row per unit, in the order
the units first appear, each a list of segments (start, end, kind).

Kinds: `queue` (scheduled, waiting for a worker), `attempt` (a worker has it; `failed` when the
attempt failed), `backoff` (retry delay), `timer`, `signal` (wait_for), `child`, `heartbeat`
(a point), `fanout` (a `for` step, from its fan-out to its end), and the
execution row's `compensation` band. A segment still open ends at `now_ms`
with `open: true`; a running execution's `end_ms` is `now_ms`. Works on the API's history shape only.
"""

from __future__ import annotations

from typing import Any

_OPEN_KIND = {
    "TimerStarted": "timer", "WaitStarted": "signal", "ChildStarted": "child", "StepFanOut": "fanout",
    "HandlerStarted": "fanout",  # an on_signal instance: a bar over its steps' rows, like a `for` step
}
_UNIT_END = {"StepSucceeded", "StepFailed", "StepSkipped", "StepCancelled", "TimerFired", "SignalConsumed"}
EXECUTION = "(execution)"
MAX_ROWS = 100  # a 10,000-element fan-out draws its first rows; the rest are counted, not sent


def gantt(history: list[dict[str, Any]], now_ms: int, running: bool = False) -> dict[str, Any]:
    """`running`: the execution has not ended, so its timeline reaches `now_ms` (open bars end there
    too), even while nothing is open."""
    rows: dict[str, list[dict[str, Any]]] = {}
    open_: dict[str, dict[str, Any]] = {}  # unit -> its open segment

    def start(unit: str, kind: str, at: int, **extra: Any) -> None:
        close(unit, at)
        seg = {"kind": kind, "start_ms": at, "end_ms": None, **extra}
        rows.setdefault(unit, []).append(seg)
        open_[unit] = seg

    def close(unit: str, at: int, kind: str | None = None) -> None:
        seg = open_.pop(unit, None)
        if seg is not None:
            seg["end_ms"] = max(at, seg["start_ms"])
            if kind:
                seg["kind"] = kind

    first = history[0]["timestamp_ms"] if history else now_ms
    last = first
    for ev in history:
        t, at, unit = ev.get("type", ""), int(ev.get("timestamp_ms") or 0), ev.get("step")
        last = max(last, at)
        if t == "StepScheduled" and unit:
            start(unit, "queue", at, attempt=ev.get("attempt"), task=ev.get("task") or ev.get("kind"))
        elif t == "StepDispatched" and unit:
            start(unit, "attempt", at, attempt=ev.get("attempt"), worker=ev.get("worker_id") or None)
        elif t == "StepAttemptFailed" and unit:
            close(unit, at, "failed")
            err = ev.get("error") or {}
            rows[unit][-1]["error"] = f"{err.get('code')}: {err.get('message')}" if rows.get(unit) else None
        elif t == "RetryScheduled" and unit:
            start(unit, "backoff", at, attempt=ev.get("next_attempt"))
            open_[unit]["end_ms"] = ev.get("fire_at_ms")
            open_.pop(unit)
        elif t in _OPEN_KIND and unit:
            name = _elements(ev) if t == "StepFanOut" else None
            start(unit, _OPEN_KIND[t], at, name=name or ev.get("signal") or ev.get("child_id"))
        elif t == "StepHeartbeat" and unit:
            rows.setdefault(unit, []).append({"kind": "heartbeat", "start_ms": at, "end_ms": None})
        elif t in _UNIT_END and unit:
            close(unit, at)
            rows.setdefault(unit, [])
        elif t == "CompensationStarted":
            start(EXECUTION, "compensation", at)
        elif t in ("CompensationCompleted", "CompensationFailed"):
            close(EXECUTION, at)
    for unit in list(open_):
        open_[unit]["open"] = True
        close(unit, max(now_ms, last))
    ordered = {EXECUTION: rows.pop(EXECUTION)} if EXECUTION in rows else {}
    ordered.update(rows)
    units = list(ordered.items())
    return {
        "hidden_rows": max(0, len(units) - MAX_ROWS),
        "start_ms": first,
        "end_ms": max([last] + [s["end_ms"] or s["start_ms"] for segs in rows.values() for s in segs]
                      + ([now_ms] if running else [])),
        "running": running,
        "rows": [{"unit": u, "segments": segs} for u, segs in units[:MAX_ROWS]],
    }


def _elements(fan_out: dict[str, Any]) -> str:
    """"3 elements"; a list kept in S3 is not read for the timeline (the history is read without)."""
    items = fan_out.get("items")
    if items is None and ["items"] in (fan_out.get("stored_values") or []):
        return "elements (their list is kept in S3)"
    return f"{len(items or [])} elements"
