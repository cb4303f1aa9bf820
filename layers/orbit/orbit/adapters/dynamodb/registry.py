"""Registry on DynamoDB: definitions live in the table; code workflows in the process.

    DEF#<name> / B#<version>#<hash>   one build of a definition (its source, compressed)
    DEF#<name> / V#<version>          the newest build of that version
    DEF#<name> / LATEST               the newest version registered

A build item is immutable (its key contains the content hash), so a parsed
definition is cached in the process for good: a decision for a running
execution, pinned to (name, version, hash), reads nothing from the table. Only
`get` without a pin (a start) reads one pointer item. Code workflows cannot be
stored - their code ships in the decider's deployment package - so they come
from the in-process `CodeRegistry` (`@orbit.workflow`).
"""

from __future__ import annotations

import threading
from typing import Any

from orbit.adapters.dynamodb.codec import decode, encode, n, s, text
from orbit.errors import BuildMismatch, UnknownWorkflow


class DynamoRegistry:
    def __init__(self, client: Any, table: str, payloads: Any, clock: Any, code: Any = None) -> None:
        from orbit.workflow import REGISTRY

        self._db = client
        self.table = table
        self._payloads = payloads
        self._clock = clock
        self.code = code if code is not None else REGISTRY
        self._cache: dict[tuple[str, str, str], Any] = {}
        self._lock = threading.Lock()

    def register(self, workflow: Any) -> None:
        from orbit.definition import Definition

        if not isinstance(workflow, Definition):
            self.code.register(workflow)
            return
        name, version, build = workflow.name, workflow.version, workflow.hash
        pk = s(f"DEF#{name}")
        now = n(self._clock.now_ms())
        # Build first, pointers after: a crash in between leaves an unreferenced build,
        # never a dangling pointer.
        self._db.put_item(TableName=self.table, Item={
            "pk": pk, "sk": s(f"B#{version}#{build}"), "registered_at": now,
            **encode(workflow.raw, self._payloads)})
        self._db.put_item(TableName=self.table, Item={"pk": pk, "sk": s(f"V#{version}"), "hash": s(build)})
        self._db.put_item(TableName=self.table, Item={
            "pk": pk, "sk": s("LATEST"), "version": s(version), "hash": s(build), "registered_at": now})
        with self._lock:
            self._cache[(name, version, build)] = workflow

    def get(self, name: str, version: str | None = None) -> Any:
        if self.code.find(name, version) is not None:
            return self.code.get(name, version)
        sk = "LATEST" if version is None else f"V#{version}"
        pointer = self._get_item(name, sk)
        if pointer is None:
            which = f" with version {version!r}" if version else ""
            raise UnknownWorkflow(f"no workflow named {name!r}{which} is registered")
        return self.get_build(name, text(pointer, "version") or str(version), pointer["hash"]["S"])

    def get_build(self, name: str, version: str, build: str) -> Any:
        if self.code.find(name) is not None:
            return self.code.get(name, version, build)
        with self._lock:
            cached = self._cache.get((name, version, build))
        if cached is not None:
            return cached
        item = self._get_item(name, f"B#{version}#{build}")
        if item is None:
            if self._get_item(name, f"V#{version}") is not None:
                raise BuildMismatch(f"workflow {name!r} version {version!r} has no build {build!r}")
            raise UnknownWorkflow(f"no workflow named {name!r} with version {version!r} is registered")
        from orbit.definition import parse_definition

        definition = parse_definition(decode(item, self._payloads))
        with self._lock:
            self._cache[(name, version, build)] = definition
        return definition

    def _get_item(self, name: str, sk: str) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self._db.get_item(
            TableName=self.table, Key={"pk": s(f"DEF#{name}"), "sk": s(sk)}).get("Item")
        return item
