"""Text for people: lines cut to the terminal with `…`, times in UTC, values kept short.

A line is cut only when there is a width to fit: the terminal's (or $ORBIT_COLUMNS).
Output piped to another program keeps every character (scripts use --json anyway).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from datetime import datetime, timezone
from typing import Any, TextIO

ELLIPSIS = "…"
MAX_PRETTY_LINES = 40  # a longer value is printed on one line (and cut to the width)


def width(stream: TextIO | None = None) -> int | None:
    """Columns to fit: $ORBIT_COLUMNS when set, else the terminal's when `stream` is one (which
    honours $COLUMNS), else None: output piped to a file or a program is never cut."""
    forced = os.environ.get("ORBIT_COLUMNS", "")
    if forced.isdigit() and int(forced) > 0:
        return int(forced)
    stream = stream or sys.stdout
    try:
        if stream.isatty():
            return shutil.get_terminal_size().columns
    except (AttributeError, ValueError, OSError):
        pass
    return None


# C0 and C1 control characters, DEL, and the bidirectional overrides and isolates that reorder
# what a terminal shows: caller text carrying them is printed escaped, never acted on.
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with every control character escaped (as `\\x1b`, `\\u202e`) but newlines: caller text
    (an error message, a step name, a reason) cannot move the cursor, recolour or retitle the
    terminal, or hide what follows it."""
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def cut(text: str, columns: int | None) -> str:
    """`text` on one line of at most `columns` characters, ending with `…` where it was cut; control
    characters escaped (`printable`)."""
    text = " ".join(text.split("\n")) if "\n" in text else text
    text = printable(text)
    if columns is None or len(text) <= columns:
        return text
    return text[: max(columns - 1, 0)] + ELLIPSIS


def utc(ms: Any, millis: bool = False) -> str:
    """Epoch milliseconds as `2026-12-01 15:31:41Z` (UTC; `...:41.947Z` with `millis`), or `-`."""
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or ms <= 0:
        return "-"
    text = datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return text + (f".{int(ms) % 1000:03d}Z" if millis else "Z")


def value_lines(label: str, value: Any, columns: int | None, expand: bool = False) -> list[str]:
    """`label: value` as indented JSON, or on one (cut) line when that would be too long."""
    pretty = json.dumps(value, indent=2, default=str)
    if expand or pretty.count("\n") < MAX_PRETTY_LINES:
        return f"{label}: {pretty}".splitlines()
    size = f" ({len(value)} items)" if isinstance(value, (list, dict)) else ""
    hint = f"{size}; --expand or --json prints all of it"
    line = f"{label}: {json.dumps(value, default=str)}"
    room = None if columns is None else max(columns - len(hint), 20)
    return [cut(line, room) + hint if room is not None and len(line) > room else line]
