"""In-memory adapters for every port: tests, the simulator, `orbit run` without moto.

They behave like the AWS adapters where it matters (conditional commit on
seq, atomic commits, paging, snapshots never going backwards) and are checked
by the same contract suites in `tests/contracts/`.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import secrets
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from orbit.adapters.memory_retention import MemoryRetention
from orbit.core.history.events import JSON
from orbit.core.history.state import ExecutionState
from orbit.errors import (
    BuildMismatch,
    ConflictError,
    NotFound,
    UnknownWorkflow,
    WorkflowRetired,
    retire_unknown,
    retired_message,
)
from orbit.service.ports import COUNT_CAP, Commit, HistoryPage, IndexEntry, Loaded, hook_key


class MemoryHistoryStore(MemoryRetention):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._commits: dict[str, dict[int, Commit]] = {}  # execution -> first_seq -> commit
        self._order: dict[str, list[int]] = {}  # execution -> first_seqs in order
        self._last: dict[str, int] = {}  # execution -> last seq
        self._snapshots: dict[str, tuple[int, dict[str, JSON]]] = {}
        self._index: dict[str, IndexEntry] = {}
        self._hooks: dict[str, tuple[str, str]] = {}
        self._hook_claims: dict[str, str] = {}  # hook_key(token) -> digest of the claiming payload
        self._request_claims: dict[tuple[str, str], tuple[int, str, str]] = {}  # -> (run, name, digest)
        self.expiry: dict[str, int] = {}  # execution -> expires_at_s (what DynamoDB's TTL would read)
        self.hook_expiry: dict[str, int] = {}  # hook token -> expires_at_s
        # execution -> the provisional expiry its items were written with while young (not what
        # reads report: nothing deletes here, so the sweeper's pin is never late; `pin` lifts it)
        self.provisional: dict[str, int] = {}
        self.cursor: str | None = None  # the retention sweeper's (adapters/dynamodb/sweep.py)

    def load(self, execution_id: str) -> Loaded:
        with self._lock:
            if execution_id not in self._commits:
                raise NotFound(f"execution {execution_id!r} not found")
            seq, snap = self._snapshots.get(execution_id, (0, None))
            state = ExecutionState.from_dict(snap) if snap is not None else ExecutionState(execution_id)
            commits = [
                self._commits[execution_id][f] for f in self._order[execution_id] if f > seq
            ]  # commits are whole: a snapshot always ends on a commit boundary
            return Loaded(state, seq, commits, self.expiry.get(execution_id))

    def commit(self, execution_id: str, commit: Commit, expires_at_s: int | None = None,
               provisional: bool = False) -> None:
        with self._lock:
            last = self._last.get(execution_id, 0)
            if commit.first_seq <= last:
                raise ConflictError(execution_id, commit.first_seq)
            if commit.first_seq != last + 1 or not commit.events:
                raise ConflictError(
                    execution_id, commit.first_seq, f"commit must start at seq {last + 1} and hold events"
                )
            self._commits.setdefault(execution_id, {})[commit.first_seq] = commit
            self._order.setdefault(execution_id, []).append(commit.first_seq)
            self._last[execution_id] = commit.last_seq
            self._written(execution_id, expires_at_s, provisional)

    def read_commit(self, execution_id: str, first_seq: int) -> Commit | None:
        with self._lock:
            return self._commits.get(execution_id, {}).get(first_seq)

    def committed_after(self, execution_id: str, seq: int) -> bool:
        with self._lock:
            return self._last.get(execution_id, 0) > seq

    def scan_commits(self, execution_id: str, newest_first: bool = True) -> Iterator[Commit]:
        with self._lock:
            order = list(self._order.get(execution_id, []))
            commits = dict(self._commits.get(execution_id, {}))
        yield from (commits[f] for f in (reversed(order) if newest_first else order))

    def history(self, execution_id: str, after_seq: int = 0, limit: int = 1000,
                values: bool = True) -> HistoryPage:  # every value is inline here
        with self._lock:
            if execution_id not in self._commits:
                raise NotFound(f"execution {execution_id!r} not found")
            out: list[Any] = []
            for f in self._order[execution_id]:
                c = self._commits[execution_id][f]
                if c.last_seq <= after_seq:
                    continue
                for r in c.events:
                    if len(out) >= limit:
                        break
                    if r.seq > after_seq:
                        out.append(r)
                if len(out) >= limit:
                    break
            more = bool(out) and out[-1].seq < self._last[execution_id]
            return HistoryPage(out, out[-1].seq if more else None, self.expiry.get(execution_id))

    def save_snapshot(self, execution_id: str, state: dict[str, JSON], seq: int,
                      expires_at_s: int | None = None, provisional: bool = False) -> None:
        with self._lock:
            self._written(execution_id, expires_at_s, provisional)
            old = self._snapshots.get(execution_id)
            if old is None or old[0] < seq:
                self._snapshots[execution_id] = (seq, copy.deepcopy(state))

    def put_index(self, entry: IndexEntry, expires_at_s: int | None = None,
                  provisional: bool = False) -> None:
        with self._lock:
            self._index[entry.execution_id] = entry
            self._written(entry.execution_id, expires_at_s, provisional)

    def list_executions(
        self,
        workflow: str | None = None,
        status: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        started_after_ms: int | None = None,
        started_before_ms: int | None = None,
        id_prefix: str | None = None,
        where: dict[str, Any] | None = None,
    ) -> tuple[list[IndexEntry], str | None]:
        from orbit.core.history.attributes import changed

        with self._lock:
            rows = sorted(self._index.values(), key=lambda e: (-e.created_at_ms, e.execution_id))
        if where:  # every condition holds: the value is the same, type included
            rows = [e for e in rows if all(k in (e.attributes or {}) for k in where)
                    and not changed(where, e.attributes or {})]
        rows = [
            e
            for e in rows
            if (workflow is None or e.workflow == workflow) and (status is None or e.status == status)
            and (started_after_ms is None or e.created_at_ms >= started_after_ms)
            and (started_before_ms is None or e.created_at_ms < started_before_ms)
            and (not id_prefix or e.execution_id.startswith(id_prefix))
        ]
        start = int(cursor) if cursor else 0
        page = rows[start : start + limit]
        return page, (str(start + limit) if start + limit < len(rows) else None)

    def search_executions(self, flt: Any, limit: int = 50,
                          cursor: str | None = None) -> tuple[list[IndexEntry], str | None]:
        """As the DynamoDB store answers (newest first, the same refusals); the cursor is the
        `created#id` key below which to carry on."""
        from orbit.core.search import matches, plan

        p = plan(flt)
        with self._lock:
            rows = list(self._index.values())
        keyed = sorted(((f"{e.created_at_ms:015d}#{e.execution_id}", e) for e in rows), reverse=True,
                       key=lambda pair: pair[0])
        kept = [(k, e) for k, e in keyed
                if (cursor is None or k < cursor)
                and (p.after_ms is None or e.created_at_ms >= p.after_ms)
                and (p.before_ms is None or e.created_at_ms < p.before_ms)
                and matches(flt, e.workflow, e.status, e.created_at_ms, e.updated_at_ms, e.execution_id,
                            e.attributes)]
        page = kept[:limit]
        return [e for _, e in page], (page[-1][0] if len(kept) > limit else None)

    def count_executions(self, workflow: str | None = None, cap: int = COUNT_CAP) -> dict[str, int]:
        with self._lock:
            rows = list(self._index.values())
        counts: dict[str, int] = {}
        for e in rows:
            if workflow is None or e.workflow == workflow:
                counts[e.status] = min(cap, counts.get(e.status, 0) + 1)
        return counts

    def put_hook(self, token: str, execution_id: str, name: str, expires_at_s: int | None = None,
                 provisional: bool = False) -> None:
        with self._lock:
            self._hooks[hook_key(token)] = (execution_id, name)
            if expires_at_s is not None and not provisional:
                self.hook_expiry[token] = expires_at_s

    def find_hook(self, token: str) -> tuple[str, str] | None:
        with self._lock:
            return self._hooks.get(hook_key(token))

    def claim_hook(self, token: str, payload: Any) -> bool:
        """Resume-once, atomically, as the DynamoDB store does: the first payload claims the
        token; the same payload again (a retried request) is still True, another is False."""
        canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(canonical.encode()).hexdigest()
        key = hook_key(token)
        with self._lock:
            if key not in self._hooks:
                return False
            return self._hook_claims.setdefault(key, digest) == digest

    def claim_request(self, execution_id: str, run: int, ident: str, name: str, digest: str,
                      expires_at_s: int) -> str | None:
        """As the DynamoDB store: None when this request holds the id (now or before), else the
        name of the request that does."""
        with self._lock:
            held = self._request_claims.setdefault((execution_id, ident), (run, name, digest))
            if held[0] != run:  # a claim of an earlier run under the same execution id
                held = self._request_claims[(execution_id, ident)] = (run, name, digest)
            return None if held[1:] == (name, digest) else held[1]

    def execution_ids(self) -> list[str]:
        with self._lock:
            return list(self._commits)


class MemoryQueues:
    """FIFO queues; `delay_s` is honoured against the clock given to `receive`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.decisions: deque[tuple[int, dict[str, JSON]]] = deque()
        self.tasks: dict[str, deque[tuple[int, dict[str, JSON]]]] = {}
        self._clock: Any = None

    def bind_clock(self, clock: Any) -> None:
        self._clock = clock

    def _visible_at(self, delay_s: int) -> int:
        return (self._clock.now_ms() if self._clock else 0) + delay_s * 1000

    def send_decision(self, message: dict[str, JSON], delay_s: int = 0) -> None:
        body = copy.deepcopy(message)
        if self._clock is not None:  # as SqsQueues: bounds the decider's look-back (orbit/outbox.py)
            body.setdefault("sent_at_ms", self._clock.now_ms())
        with self._lock:
            self.decisions.append((self._visible_at(delay_s), body))

    def send_task(self, queue: str, body: dict[str, JSON], delay_s: int = 0) -> None:
        with self._lock:
            self.tasks.setdefault(queue, deque()).append((self._visible_at(delay_s), copy.deepcopy(body)))

    def receive_decisions(self, now_ms: int, limit: int = 10) -> list[dict[str, JSON]]:
        return self._take(self.decisions, now_ms, limit)

    def receive_tasks(self, queue: str, now_ms: int, limit: int = 10) -> list[dict[str, JSON]]:
        return self._take(self.tasks.setdefault(queue, deque()), now_ms, limit)

    def _take(self, q: deque[tuple[int, dict[str, JSON]]], now_ms: int, limit: int) -> list[dict[str, JSON]]:
        out: list[dict[str, JSON]] = []
        with self._lock:
            for _ in range(len(q)):
                if len(out) >= limit:
                    break
                at, body = q.popleft()
                if at <= now_ms:
                    out.append(body)
                else:
                    q.append((at, body))
        return out

    def pending(self) -> int:
        with self._lock:
            return len(self.decisions) + sum(len(q) for q in self.tasks.values())

    def next_visible_ms(self) -> int | None:
        with self._lock:
            times = [at for at, _ in self.decisions] + [at for q in self.tasks.values() for at, _ in q]
        return min(times) if times else None


class MemoryTimers:
    """One timer per execution (arming again replaces it, unless a newer commit armed it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at: dict[str, int] = {}
        self._seq: dict[str, int] = {}  # execution -> seq of the commit that armed its timer

    def arm(self, execution_id: str, fire_at_ms: int, seq: int | None = None) -> None:
        with self._lock:
            if seq is not None and execution_id in self._at and self._seq.get(execution_id, -1) > seq:
                return  # a newer commit's wake-up: an older one never replaces it
            self._at[execution_id] = fire_at_ms
            if seq is None:
                self._seq.pop(execution_id, None)
            else:
                self._seq[execution_id] = seq

    def due(self, now_ms: int, limit: int = 100) -> list[tuple[str, int]]:
        with self._lock:
            ready = [(e, at) for e, at in self._at.items() if at <= now_ms]
            return sorted(ready, key=lambda x: (x[1], x[0]))[:limit]

    def disarm(self, execution_id: str, fire_at_ms: int | None = None) -> None:
        with self._lock:
            if fire_at_ms is None or self._at.get(execution_id) == fire_at_ms:
                self._at.pop(execution_id, None)
                self._seq.pop(execution_id, None)

    def next_fire_ms(self) -> int | None:
        with self._lock:
            return min(self._at.values()) if self._at else None


class MemoryPayloadStore:
    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}

    def put(self, data: bytes) -> str:
        ref = "mem://" + hashlib.sha256(data).hexdigest()
        self._data[ref] = bytes(data)
        return ref

    def get(self, ref: str) -> bytes:
        try:
            return self._data[ref]
        except KeyError:
            raise NotFound(f"payload {ref!r} not found") from None


class MemoryRegistry:
    """Workflows by name -> version -> build; the latest registration is the default."""

    def __init__(self) -> None:
        self._by: dict[str, dict[str, dict[str, Any]]] = {}
        self._latest: dict[str, str] = {}
        self._retired: set[tuple[str, str]] = set()  # (name, version): new starts refused
        self._shared: dict[str, dict[str, Any]] = {}  # task and queue limits (core/flow/shared.py)

    def register(self, workflow: Any) -> None:
        from orbit.core.decider.decide import workflow_build

        name, version = workflow.name, str(workflow.version)
        if getattr(workflow, "kind", None) != "code" and isinstance(getattr(workflow, "raw", None), dict):
            from orbit.core.flow.shared import declare_into

            shared = {k: dict(v) for k, v in self._shared.items()}  # a new snapshot: readers cache by it
            declare_into(shared, workflow.raw, f"{name} v{version}")  # refused before anything is held
            self._shared = shared
        self._by.setdefault(name, {}).setdefault(version, {})[workflow_build(workflow)] = workflow
        self._latest[name] = version
        self._retired.discard((name, version))  # registering a version again brings it back

    def task_limits(self, now_ms: int) -> dict[str, dict[str, Any]]:
        """The shared task and queue limits (one process: every entry is in force at once)."""
        return self._shared

    def retire(self, name: str, version: str | None = None) -> list[str]:
        """Refuse new starts of `version` (every version when None); returns the versions retired."""
        versions = [v for v, builds in self._by.get(name, {}).items()
                    if any(getattr(w, "kind", None) != "code" for w in builds.values())]
        if version is not None:
            versions = [v for v in versions if v == str(version)]
        if not versions:
            raise UnknownWorkflow(retire_unknown(name, version))
        self._retired.update((name, v) for v in versions)
        return versions

    def retired(self, name: str, version: str) -> bool:
        return (name, str(version)) in self._retired

    def deploy(self, workflows: Any) -> None:
        """Replace every code workflow held with `workflows`; definitions stay registered."""
        for name in list(self._by):
            for version in list(self._by[name]):
                builds = self._by[name][version]
                for build in [b for b, w in builds.items() if getattr(w, "kind", None) == "code"]:
                    del builds[build]
                if not builds:
                    del self._by[name][version]
            if not self._by[name]:
                del self._by[name]
                self._latest.pop(name, None)
            elif self._latest.get(name) not in self._by[name]:
                self._latest[name] = next(reversed(self._by[name]))
        for wf in workflows:
            self.register(wf)

    def get(self, name: str, version: str | None = None) -> Any:
        versions = self._by.get(name)
        if not versions:
            raise UnknownWorkflow(f"no workflow named {name!r} is registered")
        v = version if version is not None else self._latest[name]
        builds = versions.get(str(v))
        if not builds:
            raise UnknownWorkflow(f"workflow {name!r} has no version {v!r} (known: {sorted(versions)})")
        if (name, str(v)) in self._retired:
            raise WorkflowRetired(retired_message(name, str(v), version is None))
        return list(builds.values())[-1]

    def builds(self, limit: int = 1000) -> list[tuple[str, str, str]]:
        """(name, version, build) of the definitions held, in registration order per name."""
        return [(name, v, b) for name, versions in self._by.items() for v, builds in versions.items()
                for b in builds][:limit]

    def get_build(self, name: str, version: str, build: str) -> Any:
        builds = self._by.get(name, {}).get(str(version), {})
        if build in builds:
            return builds[build]
        if not builds:
            raise UnknownWorkflow(f"workflow {name!r} version {version!r} is not registered")
        raise BuildMismatch(
            f"workflow {name!r} version {version!r}: build {build!r} is not registered "
            f"(have {sorted(builds)})"
        )


class ManualClock:
    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        self._now += max(0, ms)

    def set(self, ms: int) -> None:
        self._now = max(self._now, ms)


class RandomIds:
    """Tokens from the OS's randomness: 128 bits, URL-safe. `hook_key` (a callable returning the
    stack's hook key, read when a hook first needs it): hook tokens are derived from it and only
    their hash is recorded (orbit.core.history.hook_tokens); without it they are random and recorded."""

    def __init__(self, hook_key: Callable[[], bytes] | None = None) -> None:
        self.hook_key = hook_key

    def token(self) -> str:
        return secrets.token_urlsafe(16)


class SeededIds:
    """Reproducible tokens for tests and simulations (128 bits of a hash chain); `hook_key` as above."""

    def __init__(self, seed: str = "orbit", hook_key: bytes | None = None) -> None:
        self._seed = seed
        self._n = itertools.count()
        self.hook_key = (lambda: hook_key) if hook_key else None

    def token(self) -> str:
        return hashlib.sha256(f"{self._seed}:{next(self._n)}".encode()).hexdigest()[:32]
