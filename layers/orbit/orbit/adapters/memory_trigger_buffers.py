"""Trigger buffers in memory (tests, the simulator): the DynamoDB adapter's contract."""

from __future__ import annotations

import copy
import threading
from typing import Any

from orbit.errors import ConflictError


class MemoryTriggerBuffers:
    def __init__(self) -> None:
        self._items: dict[str, tuple[dict[str, Any], int]] = {}
        self._lock = threading.Lock()

    def get(self, buffer_id: str) -> tuple[dict[str, Any], int] | None:
        with self._lock:
            got = self._items.get(buffer_id)
            return None if got is None else (copy.deepcopy(got[0]), got[1])

    def put(self, buffer_id: str, state: dict[str, Any], expected_rev: int | None) -> int:
        with self._lock:
            current = self._items.get(buffer_id)
            if (current[1] if current else None) != expected_rev:
                raise ConflictError(
                    f"buffer:{buffer_id}", (expected_rev or 0) + 1, "the trigger buffer changed"
                )
            rev = (expected_rev or 0) + 1
            self._items[buffer_id] = (copy.deepcopy(state), rev)
            return rev
