"""What an unfinished execution waits for, from its describe and its history.

The describe (the execution's state) says which units are unfinished and in which
status; the history holds the event that put each one there, with the details:
the queue and task of a StepScheduled, the worker of a StepDispatched, the fire
time of a RetryScheduled or TimerStarted, the signal of a WaitStarted, the child
of a ChildStarted. Nothing is inferred beyond those two: a status this module
does not know is shown as that status.

Works on the API's shapes (describe dict, history list of dicts), so it tells the
same for `orbit dev`, a deployed stack and `LocalStack`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

UNIT_ENDED = ("SUCCEEDED", "FAILED", "SKIPPED", "CANCELLED")
EXECUTION_RUNNING = ("RUNNING", "COMPENSATING")
# the events that put a unit into a waiting status, and the ones that explain a retry
_TRACKED = {
    "StepScheduled",
    "StepDispatched",
    "RetryScheduled",
    "StepAttemptFailed",
    "TimerStarted",
    "WaitStarted",
    "ChildStarted",
    "StepFanOut",
    "HandlerStarted",
}
# the status each event puts a unit in (evolve.py): the history, read after the describe, may be newer
_STATUS_AFTER = {
    "StepScheduled": "SCHEDULED",
    "StepDispatched": "DISPATCHED",
    "RetryScheduled": "RETRY_WAIT",
    "TimerStarted": "WAITING",
    "WaitStarted": "WAITING",
    "ChildStarted": "RUNNING",
    "StepFanOut": "RUNNING",
    "HandlerStarted": "RUNNING",
}
_WORKFLOW_END = {"WorkflowCompleted", "WorkflowFailed", "WorkflowCancelled", "WorkflowTimedOut"}
# events after which a unit waits no more: a describe read just before the history may not show them yet
_UNIT_END = {"StepSucceeded", "StepFailed", "StepSkipped", "StepCancelled", "TimerFired"}


def fmt_time(ms: int | None) -> str:
    """An epoch-ms timestamp as UTC wall time (the history's clock: virtual on the local stack)."""
    if ms is None:
        return "?"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclass
class Waiting:
    """One unfinished unit: what it waits for (`kind`), since when, and the line that says so."""

    unit: str
    status: str
    kind: str  # worker | running | retry | timer | signal | child | fan-out | other
    since_ms: int | None
    attempt: int | None
    text: str


Last = dict[str, dict[str, dict[str, Any]]]


def _last_events(history: list[dict[str, Any]]) -> tuple[Last, set[str]]:
    """unit -> event type -> the newest such event; and the names of the hooks created."""
    last: Last = {}
    hooks: set[str] = set()
    for ev in history:
        kind = ev.get("type", "")
        if (kind in _TRACKED or kind in _UNIT_END) and ev.get("step"):
            last.setdefault(ev["step"], {})[kind] = ev
            last[ev["step"]]["newest"] = ev
        elif kind == "HookCreated" and ev.get("name"):
            hooks.add(ev["name"])
    return last, hooks


def waiting(describe: dict[str, Any], history: list[dict[str, Any]]) -> list[Waiting]:
    """Every unfinished unit of a running execution, oldest wait first; [] once it has ended."""
    if describe.get("status") not in EXECUTION_RUNNING:
        return []
    if history and history[-1].get("type") in _WORKFLOW_END:  # ended after the describe was read
        return []
    steps: dict[str, dict[str, Any]] = describe.get("steps") or {}
    last, hooks = _last_events(history)
    out = [
        _explain(unit, st, last, hooks, steps)
        for unit, st in steps.items()
        if st.get("status") not in UNIT_ENDED and not _ended_since(last.get(unit) or {})
    ]
    out.sort(key=lambda w: w.since_ms if w.since_ms is not None else 0)
    return out


def _ended_since(mine: dict[str, dict[str, Any]]) -> bool:
    """The unit's newest event ends it (the history was read after the describe)."""
    return (mine.get("newest") or {}).get("type") in _UNIT_END


def _explain(
    unit: str,
    st: dict[str, Any],
    last: Last,
    hooks: set[str],
    steps: dict[str, dict[str, Any]],
) -> Waiting:
    mine = last.get(unit) or {}
    status, attempt = str(st.get("status")), st.get("attempt")
    newest = mine.get("newest") or {}
    if newest.get("type") in _STATUS_AFTER:  # moved on between the describe and the history
        status = _STATUS_AFTER[newest["type"]]
        attempt = newest.get("next_attempt") or newest.get("attempt") or attempt

    def ev(kind: str) -> dict[str, Any]:
        return mine.get(kind) or {}

    sched = ev("StepScheduled")
    where = f"queue {sched.get('queue') or '?'}" + (f" (task {sched['task']})" if sched.get("task") else "")
    limit = str(st.get("waiting") or "")
    if status == "SCHEDULED" and sched and limit.startswith("waiting for limit"):  # flow control
        text = f"{limit[len('waiting '):]}; since {fmt_time(sched['timestamp_ms'])}"
        return Waiting(unit, status, "limit", sched["timestamp_ms"], attempt, text)
    if status == "SCHEDULED" and sched:
        task = f"for task {sched['task']} " if sched.get("task") else ""
        queue = sched.get("queue") or "?"
        text = f"for a worker {task}on queue {queue} since {fmt_time(sched['timestamp_ms'])}"
        if sched.get("queue_timeout_ms") is not None and sched.get("deadline_ms") is not None:
            text += f"; a worker must take it by {fmt_time(sched['deadline_ms'])}"
        return Waiting(unit, status, "worker", sched["timestamp_ms"], attempt, text)
    disp = ev("StepDispatched")
    if status == "DISPATCHED" and disp:
        worker = f" {disp['worker_id']}" if disp.get("worker_id") else ""
        text = f"on worker{worker} ({where}) since {fmt_time(disp['timestamp_ms'])}"
        if disp.get("deadline_ms") is not None:
            text += f"; the attempt times out at {fmt_time(disp['deadline_ms'])}"
        return Waiting(unit, status, "running", disp["timestamp_ms"], attempt, text)
    retry = ev("RetryScheduled")
    if status == "RETRY_WAIT" and retry:
        failed = ev("StepAttemptFailed")
        code = (failed.get("error") or {}).get("code")
        text = f"retry (attempt {retry.get('next_attempt')}) at {fmt_time(retry.get('fire_at_ms'))}"
        text += f" after {code}" if code else ""
        return Waiting(unit, status, "retry", retry["timestamp_ms"], attempt, text)
    timer, wait = ev("TimerStarted"), ev("WaitStarted")
    if status == "WAITING" and (timer or wait):
        if timer and timer.get("seq", 0) > wait.get("seq", 0):
            text = f"timer until {fmt_time(timer.get('fire_at_ms'))}"
            return Waiting(unit, status, "timer", timer["timestamp_ms"], attempt, text)
        name = wait.get("signal")
        text = f"signal {name}" + (" (or its hook)" if name in hooks else "")
        text += f" since {fmt_time(wait['timestamp_ms'])}"
        if wait.get("deadline_ms") is not None:
            text += f"; gives up at {fmt_time(wait['deadline_ms'])}"
        return Waiting(unit, status, "signal", wait["timestamp_ms"], attempt, text)
    child, fan = ev("ChildStarted"), ev("StepFanOut")
    if status == "RUNNING" and child:
        text = f"child execution {child.get('child_id')} ({child.get('workflow')})"
        text += f" since {fmt_time(child['timestamp_ms'])}"
        return Waiting(unit, status, "child", child["timestamp_ms"], attempt, text)
    if status == "RUNNING" and fan and fan.get("items") is None and fan.get("stored_values"):
        # read without the values kept in S3 (the console): count the elements started so far
        started = [k for k in steps if k.startswith(f"{unit}[")]
        ended = sum(1 for k in started if (steps.get(k) or {}).get("status") in UNIT_ENDED)
        since = fan["timestamp_ms"]
        text = f"{ended} of {len(started)} started elements ended (the list is kept in S3), since "
        return Waiting(unit, status, "fan-out", since, None, text + fmt_time(since))
    if status == "RUNNING" and fan:
        total = len(fan.get("items") or [])
        ended = sum(1 for i in range(total) if (steps.get(f"{unit}[{i}]") or {}).get("status") in UNIT_ENDED)
        text = f"{ended} of {total} elements ended, since {fmt_time(fan['timestamp_ms'])}"
        return Waiting(unit, status, "fan-out", fan["timestamp_ms"], None, text)
    handler = ev("HandlerStarted")
    if status == "RUNNING" and handler:
        text = f"its steps (handler of signal {handler.get('signal')}, arrival #{handler.get('signal_seq')})"
        text += f" since {fmt_time(handler['timestamp_ms'])}"
        return Waiting(unit, status, "handler", handler["timestamp_ms"], None, text)
    # a status without the event that explains it (e.g. a transient one): say only what is known
    since = (mine.get("newest") or {}).get("timestamp_ms")
    return Waiting(unit, status, "other", since, attempt, f"status {status}")
