"""The memory store's retention side (MemoryHistoryStore's mixin): expiries as DynamoDB's TTL would
read them, the provisional expiry of young executions, and the retention sweeper's port methods.

Nothing here deletes: reads report `expiry` (final expiries: an ended execution's, or a pinned
one's); the provisional expiry a young execution's items were written with is kept apart in
`provisional`, since the sweeper that pins it in time on DynamoDB has nothing to race here.
"""

from __future__ import annotations

import threading
from typing import Any

from orbit.service.ports import IndexEntry, hook_key


class MemoryRetention:
    _lock: threading.Lock
    _index: dict[str, IndexEntry]
    _hooks: dict[str, Any]
    expiry: dict[str, int]
    hook_expiry: dict[str, int]
    provisional: dict[str, int]
    cursor: str | None

    def _written(self, execution_id: str, expires_at_s: int | None, provisional: bool) -> None:
        """An item of the execution was written with this expiry (reads judge by the newest)."""
        if expires_at_s is None:
            return
        if provisional:
            self.provisional[execution_id] = expires_at_s
        else:
            self.expiry[execution_id] = expires_at_s

    def retire(self, execution_id: str, ended_at_ms: int, expires_at_s: int, hook_tokens: list[str],
               dedupe_keys: list[str], written: bool = False) -> None:
        with self._lock:  # nothing here deletes: the expiry is recorded for the reads (and tests)
            self.expiry[execution_id] = expires_at_s
            if not written:  # the walk drops the marks; a young end leaves its earlier items marked
                self.provisional.pop(execution_id, None)
            for token in hook_tokens:
                if hook_key(token) in self._hooks:
                    self.hook_expiry[token] = expires_at_s

    def aging(self, after: str | None, created_before_ms: int, limit: int) -> list[tuple[str, str]]:
        with self._lock:
            rows = [(f"{e.created_at_ms:015d}#{e.execution_id}", e.execution_id) for e in self._index.values()
                    if e.status in ("RUNNING", "COMPENSATING") and e.created_at_ms < created_before_ms]
        return sorted(r for r in rows if after is None or r[0] > after)[:limit]

    def pin(self, execution_id: str, hook_tokens: list[str], until_s: int) -> int:
        with self._lock:
            if self.provisional.pop(execution_id, None) is None:
                return 0
            self.expiry[execution_id] = until_s
            return 1

    def sweep_cursor(self) -> str | None:
        return self.cursor

    def advance_sweep(self, cursor: str) -> None:
        with self._lock:
            self.cursor = max(self.cursor or "", cursor)

