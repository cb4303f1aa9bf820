"""In-memory schedule store and clock arming, for unit tests and the simulator."""

from __future__ import annotations

import copy
import threading
from typing import Any

from orbit.errors import ConflictError


class MemoryScheduleStore:
    def __init__(self) -> None:
        self._items: dict[str, tuple[dict[str, Any], int]] = {}
        self._lock = threading.Lock()
        self.writes = 0

    def get(self, schedule_id: str) -> tuple[dict[str, Any], int] | None:
        with self._lock:
            hit = self._items.get(schedule_id)
            return None if hit is None else (copy.deepcopy(hit[0]), hit[1])

    def put(self, schedule_id: str, state: dict[str, Any], expected_rev: int | None) -> int:
        with self._lock:
            current = self._items.get(schedule_id)
            if (current is None) != (expected_rev is None) or (current and current[1] != expected_rev):
                raise ConflictError(f"schedule:{schedule_id}", (expected_rev or 0) + 1)
            rev = (expected_rev or 0) + 1
            self._items[schedule_id] = (copy.deepcopy(state), rev)
            self.writes += 1
            return rev

    def delete(self, schedule_id: str) -> bool:
        with self._lock:
            return self._items.pop(schedule_id, None) is not None

    def list(self, limit: int = 50, cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        with self._lock:
            ids = sorted(i for i in self._items if cursor is None or i > cursor)
            page = ids[:limit]
            more = len(ids) > limit
            return [copy.deepcopy(self._items[i][0]) for i in page], (page[-1] if more and page else None)


class MemoryScheduler:
    """Remembers what each schedule is armed for; `due(now)` gives the messages to deliver."""

    def __init__(self) -> None:
        self.armed_at: dict[str, tuple[int, dict[str, Any]]] = {}

    def arm(self, schedule_id: str, at_ms: int | None, message: dict[str, Any] | None = None) -> None:
        if at_ms is None:
            self.armed_at.pop(schedule_id, None)
        else:
            self.armed_at[schedule_id] = (at_ms, dict(message or {}))

    def due(self, now_ms: int) -> list[dict[str, Any]]:
        out = []
        for sid, (at, msg) in sorted(self.armed_at.items(), key=lambda kv: kv[1][0]):
            if at <= now_ms:
                out.append(msg)
                del self.armed_at[sid]
        return out

    def next_fire_ms(self) -> int | None:
        return min((at for at, _ in self.armed_at.values()), default=None)
