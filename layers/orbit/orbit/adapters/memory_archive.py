"""The archive port in memory (the simulator and unit tests): execution id -> the object's bytes."""

from __future__ import annotations


class MemoryArchive:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.puts = 0

    def put(self, execution_id: str, data: bytes) -> None:
        self.objects[execution_id] = data
        self.puts += 1

    def get(self, execution_id: str) -> bytes | None:
        return self.objects.get(execution_id)
