"""Registry on DynamoDB: definitions live in the table; code workflows in the process.

    DEF#<name> / B#<version>#<hash>   one build of a definition (its source, compressed)
    DEF#<name> / V#<version>          the newest build of that version
    DEF#<name> / LATEST               the newest version registered
    DEFS / <name>#<version>#<hash>    the catalog: one small row per build (`builds()`)

A retired version (`retire`, `orbit retire`) has `retired_at` on its `V#<version>` pointer: new
starts of it are refused (`WorkflowRetired`), its builds stay, so running executions finish.
Registering the version again rewrites the pointer without it. The flag is read with the
pointer, so it is cached the same `pointer_ttl_s`.

What may be cached, and for how long, follows from what can change:
- A build item is immutable (its key contains the content hash), so a parsed
  definition is cached in the process for good: a decision for a running
  execution, pinned to (name, version, hash), reads nothing from the table.
- (name, version) is NOT immutable: `register` does not refuse a different
  definition under an existing version, it stores a new build and moves
  `V#<version>` (and `LATEST`) to it, as the memory and code registries do.
  So both pointers are mutable and are cached only for `pointer_ttl_s`
  (default 2 s). A registration made in this process is visible here at once
  (it updates the cache); one made by another process (another API instance)
  is used by this process's starts at most `pointer_ttl_s` later. A start
  that names an explicit version this process has not resolved in the last
  `pointer_ttl_s` reads the table, so a brand-new version is visible at once.
  Why cache at all: a start resolves the pointer twice (the API, then the
  start's own decision), and a busy instance starts many executions a second.
- Misses are never cached: a lookup that fails reads the table every time,
  with the same errors as before (UnknownWorkflow, BuildMismatch).

Code workflows cannot be stored - their code ships in the decider's deployment
package - so they come from the in-process `CodeRegistry` (`@orbit.workflow`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from orbit.adapters.dynamodb.codec import decode, encode, n, s, text
from orbit.errors import BuildMismatch, UnknownWorkflow, WorkflowRetired, retire_unknown, retired_message

POINTER_TTL_S = 2.0
CATALOG = "DEFS"


class DynamoRegistry:
    def __init__(
        self,
        client: Any,
        table: str,
        payloads: Any,
        clock: Any,
        code: Any = None,
        pointer_ttl_s: float = POINTER_TTL_S,
        monotonic: Callable[[], float] = time.monotonic,
        blobs: Any = None,
    ) -> None:
        from orbit.workflow import REGISTRY

        self._db = client
        self.table = table
        self._payloads = payloads
        self._clock = clock  # registration timestamps (the engine's clock)
        self.code = code if code is not None else REGISTRY
        self._cache: dict[tuple[str, str, str], Any] = {}
        # (name, pointer sort key) -> (version, hash, read at, retired): the TTL is about staleness
        # across processes, so it runs on this process's monotonic clock, not the engine's (which may
        # be a manual or simulated clock that never moves).
        self._pointers: dict[tuple[str, str], tuple[str, str, float, bool]] = {}
        self._ttl = pointer_ttl_s
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._blobs = blobs  # a large definition's S3 objects are held for good (retention.py)
        from orbit.adapters.dynamodb.task_limits import DynamoTaskLimits

        # the task and queue limits every workflow's dispatches pass (core/flow/shared.py)
        self.shared = DynamoTaskLimits(client, table, clock, monotonic=monotonic)

    def register(self, workflow: Any) -> None:
        from orbit.core.definition import Definition

        if not isinstance(workflow, Definition):
            self.code.register(workflow)
            return
        name, version, build = workflow.name, workflow.version, workflow.hash
        # Its task and queue limits first (refused as a whole when a key differs), then the build,
        # then the pointers: a crash in between leaves limits it declares, an unreferenced build,
        # never a dangling pointer.
        self.shared.declare(workflow.raw, f"{name} v{version}")
        pk = s(f"DEF#{name}")
        now = n(self._clock.now_ms())
        body = self._encode(name, workflow.raw)
        self._db.put_item(TableName=self.table, Item={
            "pk": pk, "sk": s(f"B#{version}#{build}"), "registered_at": now, **body})
        self._db.put_item(TableName=self.table, Item={
            "pk": s(CATALOG), "sk": s(f"{name}#{version}#{build}"), "name": s(name), "version": s(version),
            "hash": s(build), "registered_at": now})
        self._db.put_item(TableName=self.table, Item={"pk": pk, "sk": s(f"V#{version}"), "hash": s(build)})
        self._db.put_item(TableName=self.table, Item={
            "pk": pk, "sk": s("LATEST"), "version": s(version), "hash": s(build), "registered_at": now})
        read_at = self._monotonic()
        with self._lock:
            self._cache[(name, version, build)] = workflow
            self._pointers[(name, f"V#{version}")] = (version, build, read_at, False)
            self._pointers[(name, "LATEST")] = (version, build, read_at, False)

    def task_limits(self, now_ms: int) -> dict[str, dict[str, Any]]:
        """The shared task and queue limits in force at `now_ms` (cached: no request per dispatch)."""
        return self.shared.task_limits(now_ms)

    def retire(self, name: str, version: str | None = None) -> list[str]:
        """Refuse new starts of `version` (every version when None); returns the versions retired.
        Idempotent: retiring again sets the same flag."""
        if version is not None:
            versions = [str(version)] if self._get_item(name, f"V#{version}") is not None else []
        else:
            versions = self._versions(name)
        if not versions:
            raise UnknownWorkflow(retire_unknown(name, version))
        now = n(self._clock.now_ms())
        for v in versions:
            self._db.update_item(
                TableName=self.table, Key={"pk": s(f"DEF#{name}"), "sk": s(f"V#{v}")},
                UpdateExpression="SET retired_at = :t", ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues={":t": now})
        # LATEST carries the flag of the version it points at, so a start without a version reads one
        # item, as before. Only if it still points there: a registration in between moved it on.
        for v in versions:
            try:
                self._db.update_item(
                    TableName=self.table, Key={"pk": s(f"DEF#{name}"), "sk": s("LATEST")},
                    UpdateExpression="SET retired_at = :t", ConditionExpression="#v = :v",
                    ExpressionAttributeNames={"#v": "version"},
                    ExpressionAttributeValues={":t": now, ":v": s(v)})
            except self._db.exceptions.ConditionalCheckFailedException:
                continue
        with self._lock:  # seen at once in this process; other processes within `pointer_ttl_s`
            for v in versions:
                self._pointers.pop((name, f"V#{v}"), None)
            self._pointers.pop((name, "LATEST"), None)
        return versions

    def retired(self, name: str, version: str) -> bool:
        try:
            return self._pointer_of(name, f"V#{version}", version)[2]
        except UnknownWorkflow:
            return False

    def _versions(self, name: str) -> list[str]:
        out: list[str] = []
        kw: dict[str, Any] = {"TableName": self.table,
                              "KeyConditionExpression": "pk = :pk AND begins_with(sk, :v)",
                              "ExpressionAttributeValues": {":pk": s(f"DEF#{name}"), ":v": s("V#")}}
        while True:
            page = self._db.query(**kw)
            out += [i["sk"]["S"][2:] for i in page["Items"]]
            if "LastEvaluatedKey" not in page:
                return out
            kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _encode(self, name: str, raw: Any) -> dict[str, Any]:
        if self._blobs is None:
            return encode(raw, self._payloads)
        from orbit.adapters.dynamodb.retention import Recorder

        recorder = Recorder(self._payloads)
        attrs = encode(raw, recorder)
        if recorder.puts:  # never released: definitions are kept with the stack
            self._blobs.hold(f"DEF#{name}", recorder.puts)
        return attrs

    def deploy(self, workflows: Any) -> None:
        """Replace the code workflows this process holds (definitions stay registered)."""
        self.code.replace(workflows)

    def get(self, name: str, version: str | None = None) -> Any:
        if self.code.find(name, version) is not None:
            return self.code.get(name, version)
        latest = version is None
        version, build, retired = self._pointer_of(name, "LATEST" if latest else f"V#{version}", version)
        if retired:
            raise WorkflowRetired(retired_message(name, version, latest))
        return self.get_build(name, version, build)

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
        from orbit.core.definition import parse_definition

        definition = parse_definition(decode(item, self._payloads), stored=True)
        with self._lock:
            self._cache[(name, version, build)] = definition
        return definition

    def builds(self, limit: int = 1000) -> list[tuple[str, str, str]]:
        """(name, version, hash) of the stored definitions, from the catalog rows (builds registered
        before the catalog existed are not listed); at most `limit`, in name order."""
        out: list[tuple[str, str, str]] = []
        kw: dict[str, Any] = {"TableName": self.table, "KeyConditionExpression": "pk = :pk",
                              "ExpressionAttributeValues": {":pk": s(CATALOG)}}
        while len(out) < limit:
            page = self._db.query(**kw, Limit=limit - len(out))
            out += [(i["name"]["S"], i["version"]["S"], i["hash"]["S"]) for i in page["Items"]]
            if "LastEvaluatedKey" not in page:
                break
            kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return out

    def _pointer(self, name: str, sk: str, version: str | None) -> tuple[str, str]:
        """(version, hash) that `LATEST` or `V#<version>` points at: cached for the TTL, else read."""
        found = self._pointer_of(name, sk, version)
        return found[0], found[1]

    def _pointer_of(self, name: str, sk: str, version: str | None) -> tuple[str, str, bool]:
        """(version, hash, retired) of a pointer item, cached for the TTL."""
        now = self._monotonic()
        with self._lock:
            hit = self._pointers.get((name, sk))
        if hit is not None and now - hit[2] < self._ttl:
            return hit[0], hit[1], hit[3]
        pointer = self._get_item(name, sk)
        if pointer is None:
            which = f" with version {version!r}" if version else ""
            raise UnknownWorkflow(f"no workflow named {name!r}{which} is registered")
        retired = "retired_at" in pointer
        resolved = (text(pointer, "version") or str(version), pointer["hash"]["S"], retired)
        with self._lock:
            self._pointers[(name, sk)] = (resolved[0], resolved[1], now, retired)
        return resolved

    def _get_item(self, name: str, sk: str) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self._db.get_item(
            TableName=self.table, Key={"pk": s(f"DEF#{name}"), "sk": s(sk)}).get("Item")
        return item
