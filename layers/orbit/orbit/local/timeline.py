"""Turn an execution's history into a readable timeline: each step, attempt, duration, outcome.

Works on the DESIGN `history` shape (dicts with seq, timestamp_ms, type, ...),
so it renders a local run and a deployed execution alike. Times are the
history's (virtual, when the local stack skipped time), relative to its start.
Given the execution's describe too, a running execution's unfinished steps end
the timeline as "waiting: ..." rows (worker, timer, signal, retry, child).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from orbit.local.text import cut

from .waiting import waiting

_OPENERS = {"StepScheduled", "TimerStarted", "WaitStarted", "ChildStarted", "HandlerStarted"}


@dataclass
class Row:
    at_ms: int
    unit: str
    attempt: int | None
    duration_ms: int | None
    outcome: str


def fmt_duration(ms: int | None) -> str:
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms}ms"
    s = ms / 1000
    if s < 60:
        return f"{s:.1f}s"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            whole, rest = divmod(int(round(s)), size)
            sub = {"d": ("h", 3600), "h": ("m", 60), "m": ("s", 1)}[unit]
            part = rest // sub[1]
            return f"{whole}{unit}" + (f"{part}{sub[0]}" if part else "")
    return f"{s:.0f}s"


def _error(e: dict[str, Any] | None) -> str:
    if not isinstance(e, dict):
        return ""
    msg = str(e.get("message") or "")  # whole: the line is cut to the terminal's width, with `…`
    return f"{e.get('code')}: {msg}" if msg else str(e.get("code"))


def rows(history: list[dict[str, Any]]) -> list[Row]:
    """One row per finished attempt (and per skip, signal, compensation and final outcome)."""
    if not history:
        return []
    t0 = history[0]["timestamp_ms"]
    open_: dict[str, tuple[int | None, int]] = {}
    timers: set[str] = set()  # steps whose open entry is a sleep (closed by TimerFired)
    out: list[Row] = []

    def close(step: str, ts: int, outcome: str, attempt: int | None = None) -> None:
        started = open_.pop(step, None)
        att = attempt if attempt is not None else (started[0] if started else None)
        out.append(Row(ts - t0, step, att, ts - started[1] if started else None, outcome))

    for ev in history:
        kind, ts, step = ev.get("type"), ev["timestamp_ms"], ev.get("step")
        if kind in _OPENERS and step and step not in open_:
            open_[step] = (ev.get("attempt"), ts)
            if kind == "TimerStarted":
                timers.add(step)
        elif kind == "TimerFired" and step in timers:
            timers.discard(step)
            close(step, ts, "slept")
        elif kind == "StepSucceeded" and step:
            close(step, ts, "succeeded", ev.get("attempt"))
        elif kind == "StepAttemptFailed" and step:
            close(step, ts, "attempt failed  " + _error(ev.get("error")), ev.get("attempt"))
        elif kind == "RetryScheduled" and step:
            out.append(
                Row(
                    ts - t0,
                    step,
                    ev.get("next_attempt"),
                    None,
                    f"retry in {fmt_duration(ev.get('delay_ms'))}",
                )
            )
        elif kind == "StepFailed" and step:
            close(step, ts, "FAILED  " + _error(ev.get("error")))
        elif kind == "StepSkipped" and step:
            close(step, ts, "skipped" + (f" ({ev['reason']})" if ev.get("reason") else ""))
        elif kind == "StepCancelled" and step:
            close(step, ts, "cancelled" + (f" ({ev['reason']})" if ev.get("reason") else ""))
        elif kind == "StepAttemptUncertain" and step:
            close(step, ts, "uncertain, redelivered" + (f" ({ev['reason']})" if ev.get("reason") else ""))
        elif kind == "SignalReceived":
            out.append(Row(ts - t0, f"signal {ev.get('name')}", None, None, "received"))
        elif kind == "UpdateAccepted":
            text = f"accepted ({ev.get('update_id')})"
            out.append(Row(ts - t0, f"update {ev.get('name')}", None, None, text))
        elif kind == "UpdateCompleted":
            done = "failed  " + _error(ev.get("error")) if ev.get("error") else "completed"
            out.append(Row(ts - t0, f"update {ev.get('update_id')}", None, None, done))
        elif kind == "CancelRequested":
            out.append(Row(ts - t0, "execution", None, None, f"cancel requested ({ev.get('reason') or '-'})"))
        elif kind == "CompensationStarted":
            out.append(
                Row(
                    ts - t0,
                    "compensation",
                    None,
                    None,
                    f"started ({ev.get('reason')}): {', '.join(ev.get('steps') or [])}",
                )
            )
        elif kind == "ExecutionRedriven":
            again = ", ".join(ev.get("steps") or []) or "-"
            text = f"redriven (#{ev.get('redrive_count')}): {again}"
            out.append(Row(ts - t0, "execution", None, None, text))
        elif kind == "ExecutionForked":
            reused = ", ".join(ev.get("units") or {}) or "nothing"
            text = f"forked from {ev.get('from_execution')} at {ev.get('from_step')}; reused: {reused}"
            out.append(Row(ts - t0, "execution", None, None, text))
        elif kind == "CompensationFailed":
            out.append(Row(ts - t0, "compensation", None, None, "failed  " + _error(ev.get("error"))))
        elif kind == "CompensationCompleted":
            out.append(Row(ts - t0, "compensation", None, None, "completed"))
        elif kind in ("WorkflowCompleted", "WorkflowFailed", "WorkflowCancelled", "WorkflowTimedOut"):
            status = {
                "WorkflowCompleted": "COMPLETED",
                "WorkflowFailed": "FAILED",
                "WorkflowCancelled": "CANCELLED",
                "WorkflowTimedOut": "TIMED_OUT",
            }[kind]
            extra = _error(ev.get("error"))
            comp = ev.get("compensation")
            out.append(
                Row(
                    ts - t0,
                    "execution",
                    None,
                    ts - t0,
                    status
                    + (f"  {extra}" if extra else "")
                    + (f"  (compensation {comp})" if comp and comp != "none" else ""),
                )
            )
    return out


MAX_WAITING_ROWS = 20  # a stuck 1,000-element fan-out must not bury the timeline; describe has all


def waiting_rows(history: list[dict[str, Any]], describe: dict[str, Any]) -> list[Row]:
    """One "waiting: ..." row per unfinished unit of a running execution (see `orbit.local.waiting`)."""
    found = waiting(describe, history)
    if not found or not history:
        return []
    t0 = history[0]["timestamp_ms"]
    out = [
        Row(w.since_ms - t0 if w.since_ms is not None else 0, w.unit, w.attempt, None, "waiting: " + w.text)
        for w in found[:MAX_WAITING_ROWS]
    ]
    if len(found) > MAX_WAITING_ROWS:
        more = len(found) - MAX_WAITING_ROWS
        text = f"waiting: {more} more (orbit describe {describe.get('id')} lists every step)"
        out.append(Row(out[-1].at_ms, "...", None, None, text))
    return out


def render(
    history: list[dict[str, Any]],
    describe: dict[str, Any] | None = None,
    expand: bool = False,
    columns: int | None = None,
) -> str:
    """The timeline; given the execution's describe, ends with what a running execution waits for.

    The elements of a `for` step collapse into one row with their counts and p50/p99 durations
    (`expand` shows every element); each line is cut to `columns` with `…`.
    """
    table = rows(history)
    if not expand:
        table = collapse_fanouts(table)
    table += waiting_rows(history, describe) if describe else []
    if not table:
        return "(no history)"
    return "\n".join(render_rows(table, columns))


def render_rows(table: list[Row], columns: int | None = None, unit_width: int | None = None) -> list[str]:
    """The header and one line per row, each cut to `columns` with `…`."""
    width = unit_width or (max(12, *(len(r.unit) for r in table)) if table else 12)
    lines = [f"{'at':>9}  {'step':<{width}}  {'try':>3}  {'took':>8}  outcome"]
    for r in table:
        lines.append(
            f"{fmt_duration(r.at_ms):>9}  {r.unit:<{width}}  "
            f"{(str(r.attempt) if r.attempt else ''):>3}  {fmt_duration(r.duration_ms):>8}  {r.outcome}"
        )
    return [cut(line, columns) for line in lines]


_ELEMENT = re.compile(r"^(?P<base>(?:compensate:)?[^\[\]]+)\[(?P<index>\d+)\]$")


def collapse_fanouts(table: list[Row]) -> list[Row]:
    """One row per `for` step (and per compensation of one) in place of a row per element attempt:
    `ship[0..199]  200 elements: 198 succeeded, 2 FAILED  p50 31ms  p99 80ms`."""
    groups: dict[str, list[Row]] = {}
    out: list[Row | str] = []
    for r in table:
        m = _ELEMENT.match(r.unit)
        if m is None:
            out.append(r)
            continue
        base = m["base"]
        if base not in groups:
            groups[base] = []
            out.append(base)  # the group's row goes where its first element ended
        groups[base].append(r)
    return [item if isinstance(item, Row) else _fanout_row(item, groups[item]) for item in out]


def _fanout_row(base: str, elements: list[Row]) -> Row:
    final: dict[int, str] = {}
    retries = 0
    durations = sorted(r.duration_ms for r in elements if r.duration_ms is not None)
    for r in elements:
        index = int(_ELEMENT.match(r.unit)["index"])  # type: ignore[index]
        if r.outcome.startswith("retry in"):
            retries += 1
            continue
        final[index] = r.outcome.split()[0] if r.outcome else "?"
    counts: dict[str, int] = {}
    for outcome in final.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    n = len(final)
    parts = ", ".join(f"{c} {o}" for o, c in sorted(counts.items(), key=lambda kv: -kv[1]))
    text = f"{n} element{'s' if n != 1 else ''}: {parts}"
    if retries:
        text += f"; {retries} retr{'ies' if retries != 1 else 'y'}"
    if durations:
        text += f"  p50 {fmt_duration(_pct(durations, 50))}  p99 {fmt_duration(_pct(durations, 99))}"
    last = max(final) if final else 0
    return Row(elements[0].at_ms, f"{base}[0..{last}]", None, None, text)


def _pct(ordered: list[int], p: int) -> int:
    """The p-th percentile of sorted values (nearest rank)."""
    rank = max(1, -(-p * len(ordered) // 100))
    return ordered[min(rank, len(ordered)) - 1]
