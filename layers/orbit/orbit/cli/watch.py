"""`orbit` commands that watch an execution or move time: start --wait, history --follow, advance.

They use only the API (`orbit.Client`), so they work against `orbit dev` and a
deployed stack alike; `advance` talks to `orbit dev`'s local-only route.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Callable

from orbit.cli.args import UsageError
from orbit.errors import OrbitError
from orbit.local.text import cut, utc, width

TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT")
POLL_S = 0.5


def wait_for_end(client: Any, eid: str, timeout_s: float,
                 on_poll: Callable[[dict[str, Any]], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Describe `eid` until it has ended (or raise OrbitError after `timeout_s` of wall time)."""
    deadline = time.monotonic() + timeout_s
    while True:
        desc: dict[str, Any] = client.describe(eid)
        if on_poll is not None:
            on_poll(desc)
        if desc.get("status") in TERMINAL:
            return desc
        if time.monotonic() >= deadline:
            raise OrbitError(
                f"execution {eid} is still {desc.get('status')} after {timeout_s:g} s; "
                f"raise --timeout, or follow it with `orbit history {eid} --follow`"
            )
        sleep(POLL_S)


def ended_line(desc: dict[str, Any]) -> str:
    """`ID: FAILED  INPUT_CONTRACT_VIOLATION: ...` for an execution that did not complete."""
    err = desc.get("error") or {}
    why = f"  {err.get('code')}: {err.get('message')}" if err else ""
    return cut(f"execution {desc.get('id')} is {desc.get('status')}{why}", None)  # escaped caller text


def follow_history(client: Any, eid: str, expand: bool, timeout_s: float,
                   sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Print the timeline of `eid` as it grows (new rows only) until the execution ends."""
    from orbit.local.timeline import collapse_fanouts, render_rows, rows

    columns = width()
    printed = 0
    deadline = time.monotonic() + timeout_s
    header = False
    while True:
        desc: dict[str, Any] = client.describe(eid)  # first: the history read after is at least as new
        events = client.history(eid)
        table = rows(events)
        ended = desc.get("status") in TERMINAL
        if not expand:  # a fan-out's row is final only when the step has ended: hold it back till then
            table = collapse_fanouts(table) if ended else [r for r in table if "[" not in r.unit]
        lines = render_rows(table, columns, unit_width=24)  # fixed: rows already printed stay aligned
        if not header:
            print(lines[0], flush=True)
            header = True
        for line in lines[1 + printed:]:
            print(line, flush=True)
        printed = max(printed, len(lines) - 1)
        if ended:
            return desc
        if time.monotonic() >= deadline:
            raise OrbitError(f"execution {eid} is still {desc.get('status')} after --timeout {timeout_s:g} s")
        sleep(POLL_S)


def advance(client: Any, duration: str) -> dict[str, Any]:
    """Move `orbit dev`'s virtual clock on by `duration` (e.g. 7d, 90s) and run what became due."""
    from orbit.core.definition import parse_duration
    from orbit.core.definition.durations import DurationError

    try:
        ms = parse_duration(duration) if not duration.isdigit() else None
    except DurationError as exc:
        raise UsageError(f"DURATION {duration!r}: {exc}") from None
    if ms is None:
        raise UsageError(f"DURATION {duration!r} has no unit; e.g. orbit advance 7d, orbit advance 90s")
    try:
        res: dict[str, Any] = client._call("POST", "/_local/advance", {"seconds": ms / 1000})
    except OrbitError as exc:
        if "404" in str(exc):
            raise OrbitError(f"{client.url} has no clock to move: `orbit advance` works with `orbit dev` "
                             "only (a deployed stack runs on real time)") from None
        raise
    return res


def raw_lines(events: list[dict[str, Any]]) -> list[str]:
    """`orbit history --raw`: seq, time (UTC, with ms), type and every other field, cut to the width."""
    columns = width()
    out = []
    for ev in events:
        fields = {k: v for k, v in ev.items() if k not in ("seq", "timestamp_ms", "type")}
        stamp = utc(ev.get("timestamp_ms"), millis=True)
        out.append(cut(f"{ev.get('seq'):>5}  {stamp:<24}  {ev.get('type'):<22} "
                       f"{json.dumps(fields, default=str)}", columns))
    return out


def print_err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
