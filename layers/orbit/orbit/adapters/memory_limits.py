"""Flow-control state in memory (the simulator, unit tests): the same contract as
adapters/dynamodb/limits.py, each method one atomic step as each write there is one request."""

from __future__ import annotations

import copy
import threading
from typing import Any

from orbit.core.flow.bucket import Level, reserve
from orbit.core.flow.gates import Bucket, Slot
from orbit.core.flow.order import Counter


class MemoryLimits:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counters: dict[str, Counter] = {}
        self.lines: dict[tuple[str, int, str], dict[str, int]] = {}  # FIFO: holder -> since (in order)
        self.tickets: dict[tuple[str, str], dict[str, Any]] = {}  # (scope, holder) ->
        self.buckets: dict[str, Level] = {}
        self.bucket_info: dict[str, Bucket] = {}  # as DynamoLimits keeps them: for listing
        self.drops: dict[str, dict[str, Any]] = {}
        self.pointers: dict[str, str] = {}  # a waiting holder -> the scope it waits on (describe)
        self.requests = 0  # what the DynamoDB adapter would send (bench_flow.py)

    def _counter(self, slot: Slot) -> Counter:
        c = self.counters.get(slot.scope)
        if c is None:
            c = self.counters[slot.scope] = Counter(slot.scope, slot.name, slot.key, slot.limit)
        c.limit = slot.limit
        return c

    def acquire(self, slot: Slot, holder: str, now_ms: int) -> bool:
        with self._lock:
            self.requests += 1
            c = self._counter(slot)
            if holder in c.holders:
                return True
            if len(c.holders) >= slot.limit:
                return False
            c.holders.add(holder)
            return True

    def enqueue(self, slot: Slot, holder: str, priority: int, ticket: dict[str, Any], now_ms: int) -> bool:
        """Join the line, if the counter is still full; False: there is room now (acquire again)."""
        with self._lock:
            self.requests += 1
            c = self._counter(slot)
            if (slot.scope, holder) in self.tickets or holder in c.holders:
                return True  # already in line (a redelivery), or let in since
            if len(c.holders) < slot.limit:
                return False
            line = (priority, slot.fairness)
            c.waiting[line] = c.waiting.get(line, 0) + 1
            c.passes.setdefault(line, c.vt)
            c.weights[slot.fairness] = slot.weight
            self.lines.setdefault((slot.scope, *line), {})[holder] = now_ms
            self.pointers[holder] = slot.scope
            self.tickets[(slot.scope, holder)] = {
                **ticket,
                "scope": slot.scope,
                "priority": priority,
                "tenant": slot.fairness,
                "since_ms": now_ms,
                "entry": f"{now_ms:015d}#{holder}",
            }
            return True

    def release(self, slot: Slot, holder: str) -> Counter | None:
        """Give `holder`'s slot back; the counter after (its `granted` as it was: it tells whether
        the holder was let in from a line), or None when it held none (then the counter is not
        changed: a second release is a no-op)."""
        with self._lock:
            self.requests += 1
            c = self.counters.get(slot.scope)
            if c is None or holder not in c.holders:
                return None
            c.holders.discard(holder)
            was = holder in c.granted
            if was:
                c.granted.discard(holder)
                self.tickets.pop((slot.scope, holder), None)
                self.requests += 1  # the ticket's delete
            out = copy.deepcopy(c)
            if was:
                out.granted.add(holder)  # as DynamoLimits: `granted` as it was before the release
            return out

    def read(self, scope: str) -> Counter | None:
        with self._lock:
            self.requests += 1
            c = self.counters.get(scope)
            return copy.deepcopy(c) if c is not None else None

    def cancel_wait(self, slot: Slot, holder: str) -> bool:
        """Leave the line (an attempt that ended while it waited); False: it was not in it."""
        with self._lock:
            self.requests += 1
            t = self.tickets.get((slot.scope, holder))
            if t is None or t.get("granted_ms") is not None:
                return False
            self.requests += 1
            del self.tickets[(slot.scope, holder)]
            self.pointers.pop(holder, None)
            c = self.counters[t["scope"]]
            line = (t["priority"], t["tenant"])
            c.waiting[line] -= 1
            if c.waiting[line] <= 0:
                del c.waiting[line]
            self.lines[(t["scope"], *line)].pop(holder, None)
            return True

    def head(self, scope: str, priority: int, tenant: str) -> tuple[str, dict[str, Any]] | None:
        """The first item of a line: (its entry, its ticket)."""
        with self._lock:
            self.requests += 1
            line = self.lines.get((scope, priority, tenant))
            if not line:
                return None
            holder = next(iter(line))
            since = line[holder]
            return f"{since:015d}#{holder}", copy.deepcopy(self.tickets[(scope, holder)])

    def grant(
        self,
        slot: Slot,
        entry: str,
        holder: str,
        priority: int,
        tenant: str,
        vt: int,
        tenant_pass: int | None,
        now_ms: int,
    ) -> bool:
        """Let `holder` in from its line (`entry`), if there is still room; False: not now."""
        with self._lock:
            self.requests += 1
            c = self.counters.get(slot.scope)
            t = self.tickets.get((slot.scope, holder))
            line = self.lines.get((slot.scope, priority, tenant)) or {}
            if (
                c is None
                or t is None
                or t.get("granted_ms") is not None
                or holder in c.holders
                or len(c.holders) >= slot.limit
                or holder not in line
            ):
                return False
            c.holders.add(holder)
            c.granted.add(holder)
            c.waiting[(priority, tenant)] -= 1
            if c.waiting[(priority, tenant)] <= 0:
                del c.waiting[(priority, tenant)]
            c.vt = vt
            if tenant_pass is None:
                c.passes.pop((priority, tenant), None)
            else:
                c.passes[(priority, tenant)] = tenant_pass
            line.pop(holder)
            t["granted_ms"] = now_ms
            self.pointers.pop(holder, None)
            return True

    def ticket(self, scope: str, holder: str) -> dict[str, Any] | None:
        with self._lock:
            self.requests += 1
            t = self.tickets.get((scope, holder))
            return copy.deepcopy(t) if t is not None else None

    def reserve(self, bucket: Bucket, now_ms: int) -> int | None:
        with self._lock:
            self.requests += 1
            level, delay = reserve(
                self.buckets.get(bucket.scope),
                bucket.rate,
                bucket.period_ms,
                bucket.burst,
                now_ms,
                bucket.on_exceed == "wait",
            )
            if level is not None:
                self.buckets[bucket.scope] = level
                self.bucket_info[bucket.scope] = bucket
            return delay

    def record_drop(self, holder: str, reason: str, now_ms: int) -> None:
        with self._lock:
            self.requests += 1
            self.drops[holder] = {"reason": reason, "at_ms": now_ms}

    def dropped(self, holder: str) -> dict[str, Any] | None:
        with self._lock:
            return self.drops.get(holder)

    def where(self, holder: str) -> str | None:
        """The scope `holder` waits on, or None."""
        with self._lock:
            return self.pointers.get(holder)

    def list_buckets(self) -> list[dict[str, Any]]:
        with self._lock:
            out = []
            for scope, lv in self.buckets.items():
                b = self.bucket_info[scope]
                out.append(
                    {
                        "scope": scope,
                        "name": b.name,
                        "key": b.key,
                        "rate": b.rate,
                        "period_ms": b.period_ms,
                        "burst": b.burst,
                        "level_ms": lv.level,
                        "at_ms": lv.at_ms,
                    }
                )
            return out

    def list_counters(self) -> list[Counter]:
        with self._lock:
            return [copy.deepcopy(c) for c in self.counters.values()]

    def line(self, scope: str, limit: int = 20) -> list[dict[str, Any]]:
        """Who waits on `scope`, in the order they would be let in when all lines are FIFO."""
        with self._lock:
            rows = [
                {"holder": h, "priority": p, "tenant": t, "since_ms": since}
                for (s, p, t), line in self.lines.items()
                if s == scope
                for h, since in line.items()
            ]
        return sorted(rows, key=lambda r: (r["priority"], r["since_ms"], r["holder"]))[:limit]
