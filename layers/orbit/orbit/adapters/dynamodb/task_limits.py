"""The deployment's shared task and queue limits on DynamoDB (core/flow/shared.py,
docs/decisions/flow3-task-limits.md):

    FLOW#SHARED / task:<T>    c, ck, ca (concurrency: JSON, key text, in force from ms),
                              r, rk (rate: JSON, key text), p (priority: JSON), from, at
    FLOW#SHARED / queue:<Q>   c, ck, ca

Written when a definition that declares `tasks:` or `queues:` limits is registered: one
`UpdateItem` per limit, conditional on the key of each field being the one it was first declared
with (`attribute_not_exists(ck) OR ck = :ck`), so a field is never lost and its key never
changes. Read by every decider through a cache: one `Query` per `ttl_s` per process, none per
dispatch.

A concurrency field is in force `settle_ms` after it was first declared (`ca`, on the engine's
clock), longer than any process's cache lives: from then on every decider knows it, so an
attempt that took a slot under it is given back under it, by whichever decider sees its end.
Before then nobody applies it. One process (the local stack) needs no wait: `settle_ms=0`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from orbit.adapters.dynamodb.codec import n, s
from orbit.core.flow.shared import conflict, declared, merged
from orbit.errors import ValidationError

PK = "FLOW#SHARED"
TTL_S = 60.0
SETTLE_MS = 65_000  # TTL_S and 5 s for the clocks of two Lambdas to differ
_FIELDS = {"concurrency": "c", "rate": "r", "priority": "p"}


class DynamoTaskLimits:
    def __init__(self, client: Any, table: str, clock: Any, ttl_s: float = TTL_S,
                 settle_ms: int = SETTLE_MS, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._db, self.table, self._clock = client, table, clock
        self.ttl_s, self.settle_ms, self._monotonic = ttl_s, settle_ms, monotonic
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, Any]] | None = None  # name -> entry, as stored
        self._read_at = 0.0
        self._view: tuple[Any, frozenset[str], dict[str, dict[str, Any]]] | None = None
        self.reads = 0

    # ------------------------------------------------------------------ registration
    def declare(self, raw: Any, source: str) -> None:
        """Record a definition's limits (before the definition itself is stored: a crash in between
        leaves limits its registration, retried, declares again). ValidationError, nothing written,
        when a key differs from the registry's."""
        new = declared(raw) if isinstance(raw, dict) else {}
        if not new:
            return
        have = self._read(force=True)
        problems = [p for name, e in new.items() if (p := conflict(name, have.get(name), e)) is not None]
        if problems:
            raise ValidationError(problems)
        now = self._clock.now_ms()
        for name, entry in new.items():
            self._write(name, entry, source, now)
        with self._lock:
            entries = dict(self._entries or {})
            for name, entry in new.items():
                old = entries.get(name) or {}
                at = {"ca": old.get("ca", now)} if "concurrency" in entry else {}
                entries[name] = {**merged(old, entry), **at, "from": source}
            self._entries, self._view = entries, None

    def _write(self, name: str, entry: dict[str, Any], source: str, now: int) -> None:
        sets, cond = ["#f = :f"], []
        names, values = {"#f": "from"}, {":f": s(source), ":now": n(now)}
        for field, attr in _FIELDS.items():
            if field in entry:
                sets.append(f"{attr} = :{attr}")
                values[f":{attr}"] = s(json.dumps(entry[field], sort_keys=True))
        for field, attr in (("concurrency", "ck"), ("rate", "rk")):
            if attr in entry:
                sets.append(f"{attr} = :{attr}")
                values[f":{attr}"] = s(entry[attr])
                cond.append(f"(attribute_not_exists({attr}) OR {attr} = :{attr})")
        if "concurrency" in entry:
            sets.append("ca = if_not_exists(ca, :now)")
        sets.append("#at = if_not_exists(#at, :now)")
        names["#at"] = "at"
        kw: dict[str, Any] = {"TableName": self.table, "Key": {"pk": s(PK), "sk": s(name)},
                              "UpdateExpression": "SET " + ", ".join(sets),
                              "ExpressionAttributeNames": names, "ExpressionAttributeValues": values}
        if cond:
            kw["ConditionExpression"] = " AND ".join(cond)
        try:
            self._db.update_item(**kw)
        except self._db.exceptions.ConditionalCheckFailedException:
            again = self._read(force=True)  # another registration declared it meanwhile, keyed otherwise
            problem = conflict(name, again.get(name), entry)
            raise ValidationError([problem] if problem else f"{name}: declared meanwhile; register again",
                                  "" if problem else name) from None

    # ------------------------------------------------------------------ what deciders read
    def task_limits(self, now_ms: int) -> dict[str, dict[str, Any]]:
        """The entries in force at `now_ms`: the same object while nothing changed (readers cache
        what they derive from it by identity)."""
        entries = self._read()
        active = frozenset(name for name, e in entries.items()
                           if "ca" in e and now_ms >= int(e["ca"]) + self.settle_ms)
        with self._lock:
            view = self._view
            if view is not None and view[0] is entries and view[1] == active:
                return view[2]
            out = {}
            for name, e in entries.items():
                shown = {k: v for k, v in e.items() if k != "concurrency" or name in active}
                if any(f in shown for f in _FIELDS):
                    out[name] = shown
            self._view = (entries, active, out)
            return out

    def _read(self, force: bool = False) -> dict[str, dict[str, Any]]:
        now = self._monotonic()
        with self._lock:
            if not force and self._entries is not None and now - self._read_at < self.ttl_s:
                return self._entries
        entries: dict[str, dict[str, Any]] = {}
        kw: dict[str, Any] = {"TableName": self.table, "KeyConditionExpression": "pk = :pk",
                              "ExpressionAttributeValues": {":pk": s(PK)}, "ConsistentRead": True}
        while True:
            page = self._db.query(**kw)
            self.reads += 1
            for item in page.get("Items", []):
                entries[item["sk"]["S"]] = _entry(item)
            if "LastEvaluatedKey" not in page:
                break
            kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        with self._lock:
            if self._entries != entries:
                self._entries, self._view = entries, None
            self._read_at = now
            return self._entries if self._entries is not None else entries


def _entry(item: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field, attr in _FIELDS.items():
        if attr in item:
            out[field] = json.loads(item[attr]["S"])
    for attr in ("ck", "rk", "from"):
        if attr in item:
            out[attr] = item[attr]["S"]
    for attr in ("ca", "at"):
        if attr in item:
            out[attr] = int(item[attr]["N"])
    return out
