"""Live progress for `orbit run`: one line whenever a step changes status.

The elements of a `for` step share one line, printed when their counts change
(`expand=True` prints every element). Times are virtual, since the start.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

from orbit.local.text import cut

from .timeline import fmt_duration

_ELEMENT = re.compile(r"^(?P<base>.+)\[\d+\]$")


class ProgressPrinter:
    def __init__(
        self, out: TextIO, quiet: bool = False, expand: bool = False, columns: int | None = None
    ) -> None:
        self.out = out
        self.quiet = quiet
        self.expand = expand
        self.columns = columns
        self.seen: dict[str, tuple[Any, ...]] = {}
        self.status: str | None = None
        self.t0: int | None = None

    def _say(self, at: str, unit: str, text: str) -> None:
        print(cut(f"{at} {unit:<20} {text}", self.columns), file=self.out, flush=True)

    def update(self, desc: dict[str, Any], now_ms: int) -> None:
        if self.quiet:
            return
        if self.t0 is None:
            self.t0 = desc.get("created_at_ms") or now_ms
        at = f"[{fmt_duration(max(now_ms - self.t0, 0)):>7}]"
        fanouts: dict[str, dict[str, int]] = {}
        for unit, st in (desc.get("steps") or {}).items():
            m = None if self.expand else _ELEMENT.match(unit)
            if m is not None:
                counts = fanouts.setdefault(m["base"], {})
                counts[st.get("status")] = counts.get(st.get("status"), 0) + 1
                continue
            key: tuple[Any, ...] = (st.get("status"), st.get("attempt"))
            if self.seen.get(unit) != key:
                self.seen[unit] = key
                err = st.get("error") or {}
                extra = f"  {err.get('code')}" if err else ""
                self._say(at, unit, f"{st.get('status'):<12} attempt {st.get('attempt') or '-'}{extra}")
        for base, counts in fanouts.items():
            key = tuple(sorted(counts.items()))
            if self.seen.get(base + "[*]") != key:
                self.seen[base + "[*]"] = key
                total = sum(counts.values())
                parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: -kv[1]))
                self._say(at, base + "[*]", f"{total} elements: {parts}")
        if desc.get("status") != self.status:
            self.status = desc.get("status")
            self._say(at, "(execution)", str(self.status))
