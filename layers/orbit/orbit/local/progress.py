"""Live progress for `orbit run`: one line whenever a step changes status."""

from __future__ import annotations

from typing import Any, TextIO


class ProgressPrinter:
    def __init__(self, out: TextIO, quiet: bool = False) -> None:
        self.out = out
        self.quiet = quiet
        self.seen: dict[str, tuple[Any, Any]] = {}
        self.status: str | None = None
        self.t0: int | None = None

    def update(self, desc: dict[str, Any], now_ms: int) -> None:
        if self.quiet:
            return
        if self.t0 is None:
            self.t0 = desc.get("created_at_ms") or now_ms
        at = f"[{(now_ms - self.t0) / 1000:>8.1f}s]"
        for unit, st in (desc.get("steps") or {}).items():
            key = (st.get("status"), st.get("attempt"))
            if self.seen.get(unit) != key:
                self.seen[unit] = key
                err = st.get("error") or {}
                extra = f"  {err.get('code')}" if err else ""
                print(
                    f"{at} {unit:<20} {st.get('status'):<12} attempt {st.get('attempt') or '-'}{extra}",
                    file=self.out,
                    flush=True,
                )
        if desc.get("status") != self.status:
            self.status = desc.get("status")
            print(f"{at} {'(execution)':<20} {self.status}", file=self.out, flush=True)
