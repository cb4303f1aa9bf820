"""One unit's story for the console's step panel (a click on a graph node or a call in the tree):
its attempts (queued, dispatched, ended, outcome, error, worker), the input it was sent, its
output or final error, and its timing; a fan-out also lists its elements. Read from the API's
history shape only; values kept in S3 are not read (their paths are listed in `stored_values`),
and tokens are never copied (a step token answers for the step)."""

from __future__ import annotations

from typing import Any

_END = {"StepSucceeded": "SUCCEEDED", "StepFailed": "FAILED", "StepSkipped": "SKIPPED",
        "StepCancelled": "CANCELLED", "TimerFired": "SUCCEEDED", "SignalConsumed": "SUCCEEDED"}
_START = {"StepScheduled", "TimerStarted", "WaitStarted", "ChildStarted", "StepFanOut"}
MAX_ELEMENTS = 200  # a 10,000-element fan-out lists its first elements; the rest are counted


def step_detail(history: list[dict[str, Any]], unit: str) -> dict[str, Any] | None:
    """None when no event names `unit`."""
    out: dict[str, Any] = {"unit": unit, "status": None, "attempts": [], "input": None, "output": None,
                           "error": None, "started_ms": None, "ended_ms": None, "duration_ms": None,
                           "stored_values": [], "elements": [], "hidden_elements": 0}
    attempts: dict[int, dict[str, Any]] = {}
    elements: dict[str, str] = {}
    seen = False
    for ev in history:
        step, t, at = ev.get("step"), ev.get("type", ""), ev.get("timestamp_ms")
        if isinstance(step, str) and step.startswith(unit + "[") and step.endswith("]"):
            if t in _END:
                elements[step] = _END[t]
            elif step not in elements or t in ("StepScheduled", "StepDispatched"):
                elements[step] = "RUNNING"
            continue
        if step != unit:
            continue
        seen = True
        if t in _START and out["started_ms"] is None:
            out["started_ms"] = at
            out["status"] = "RUNNING"
        for path in ev.get("stored_values") or []:
            out["stored_values"].append([t, *path])
        if t == "StepScheduled":
            n = int(ev.get("attempt") or 1)
            attempts[n] = {"attempt": n, "scheduled_ms": at, "dispatched_ms": None, "ended_ms": None,
                           "outcome": "queued", "error": None, "worker": None}
            if out["input"] is None or n == 1:
                out["input"] = ev.get("input")
            out["task"] = ev.get("task") or ev.get("kind")
        elif t == "StepDispatched" and int(ev.get("attempt") or 1) in attempts:
            a = attempts[int(ev.get("attempt") or 1)]
            a.update(dispatched_ms=at, outcome="running", worker=ev.get("worker_id") or None)
        elif t in ("StepAttemptFailed", "StepAttemptUncertain") and int(ev.get("attempt") or 1) in attempts:
            failed = t == "StepAttemptFailed"
            attempts[int(ev.get("attempt") or 1)].update(
                ended_ms=at, outcome="failed" if failed else "uncertain",
                error=ev.get("error") if failed else ev.get("reason"))
        elif t == "RetryScheduled":
            out["status"] = "RETRY_WAIT"
        elif t == "StepFanOut":
            out["input"] = ev.get("items")
        elif t == "WaitStarted":
            out["task"] = "wait_for " + str(ev.get("signal"))
        elif t == "ChildStarted":
            out["task"] = "child " + str(ev.get("child_id"))
            out["input"] = ev.get("input")
        elif t in _END:
            out["status"], out["ended_ms"] = _END[t], at
            if t == "StepSucceeded":
                n = int(ev.get("attempt") or 1)
                if n in attempts:
                    attempts[n].update(ended_ms=at, outcome="succeeded")
                out["output"] = ev.get("output")
            elif t == "SignalConsumed":
                out["output"] = ev.get("payload")
            elif t == "StepFailed":
                out["error"] = ev.get("error")
            elif t in ("StepSkipped", "StepCancelled"):
                out["reason"] = ev.get("reason")
    if not seen and not elements:
        return None
    if out["started_ms"] is not None and out["ended_ms"] is not None:
        out["duration_ms"] = out["ended_ms"] - out["started_ms"]
    out["attempts"] = [attempts[n] for n in sorted(attempts)]
    names = list(elements)
    out["elements"] = [{"unit": u, "status": elements[u]} for u in names[:MAX_ELEMENTS]]
    out["hidden_elements"] = max(0, len(names) - MAX_ELEMENTS)
    if elements and out["status"] is None:
        states = set(elements.values())
        out["status"] = ("FAILED" if "FAILED" in states
                         else "SUCCEEDED" if states == {"SUCCEEDED"} else "RUNNING")
    return out
