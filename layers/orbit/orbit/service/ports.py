"""Ports: the interfaces between the pure core and the outside world.

Adapters: `orbit/adapters/memory.py` (tests, simulator), `dynamodb.py`,
`sqs.py`, `s3.py`. One shared contract suite per port
(`tests/contracts/`) runs against each backend.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from orbit.core.decider.context import IdSource  # noqa: F401  (re-exported: the decider defines it)
from orbit.core.history.effects import Effect, effect_from_dict
from orbit.core.history.events import JSON, Recorded, recorded_from_dict
from orbit.core.history.state import ExecutionState
from orbit.errors import ValidationError


@dataclass(frozen=True)
class Commit:
    """One decision's write: its events (seq first_seq..), the inbound it handled, its effects.

    The commit log is the outbox: a redelivered inbound message (found in
    `state.inbound`) has its stored effects re-sent, unchanged.
    """

    first_seq: int
    timestamp_ms: int
    inbound_id: str | None
    events: list[Recorded]
    effects: list[Effect] = field(default_factory=list)
    # A batch decision (several messages of one execution, one write) lists the other ids here.
    inbound_ids: tuple[str, ...] = ()

    @property
    def all_inbound(self) -> list[str]:
        return ([self.inbound_id] if self.inbound_id else []) + [i for i in self.inbound_ids if i]

    @property
    def last_seq(self) -> int:
        return self.first_seq + len(self.events) - 1

    def to_dict(self) -> dict[str, JSON]:
        return {
            "first_seq": self.first_seq,
            "timestamp_ms": self.timestamp_ms,
            "inbound_id": self.inbound_id,
            "events": [r.to_dict() for r in self.events],
            "effects": [e.to_dict() for e in self.effects],
            "inbound_ids": list(self.inbound_ids),
        }

    @classmethod
    def from_dict(cls, d: Any) -> Commit:
        if not isinstance(d, dict) or not isinstance(d.get("first_seq"), int):
            raise ValidationError("commit needs an integer `first_seq`", "commit")
        return cls(
            d["first_seq"],
            int(d.get("timestamp_ms") or 0),
            d.get("inbound_id"),
            [recorded_from_dict(r) for r in d.get("events") or []],
            [effect_from_dict(e) for e in d.get("effects") or []],
            tuple(d.get("inbound_ids") or ()),
        )


@dataclass
class Loaded:
    """What `HistoryStore.load` returns: the latest snapshot (or a blank state) and the commits after it."""

    state: ExecutionState
    snapshot_seq: int
    commits: list[Commit]
    expires_at_s: int | None = None  # set once the execution ended and its retention was applied

    def fold(self) -> ExecutionState:
        """The current state: snapshot + commits (also fills `state.inbound`). Mutates `self.state`."""
        from orbit.core.history.model import apply_commit

        for c in self.commits:
            apply_commit(self.state, c.events, c.inbound_id, c.first_seq, c.timestamp_ms, c.inbound_ids)
        self.commits = []
        return self.state


@dataclass(frozen=True)
class HistoryPage:
    records: list[Recorded]
    next_after_seq: int | None  # pass as `after_seq` for the next page; None: no more
    expires_at_s: int | None = None  # as in Loaded
    # read with values=False: seq -> the paths (inside the event) of the large values left out
    # (null in the record), kept in the payload store and not read
    stored: dict[int, list[list[Any]]] = field(default_factory=dict)


COUNT_CAP = 1_000  # counts by status stop here ("1,000+"): a count reads every row it counts


@dataclass(frozen=True)
class IndexEntry:
    """One row of the execution index (list by workflow, status, time)."""

    execution_id: str
    workflow: str
    version: str
    status: str
    created_at_ms: int
    updated_at_ms: int
    parent_id: str | None = None
    attributes: dict[str, JSON] | None = None  # search attributes (orbit/core/history/attributes.py)

    def to_dict(self) -> dict[str, JSON]:
        d = dict(self.__dict__)
        if not d["attributes"]:
            del d["attributes"]  # listed only for executions that set some
        return d


class HistoryStore(Protocol):
    def load(self, execution_id: str) -> Loaded:
        """Latest snapshot + commits after it. Raises NotFound when nothing was ever committed."""
        ...

    def commit(self, execution_id: str, commit: Commit, expires_at_s: int | None = None,
               provisional: bool = False) -> None:
        """Append atomically, conditional on `commit.first_seq` not existing -> ConflictError.
        `expires_at_s`: the item expires then: the execution has ended (as after `retire`), or it
        is young and `provisional` (service/retention.py: `pin` may lift it). The same two
        arguments on save_snapshot, put_index and put_hook mean the same."""
        ...

    def read_commit(self, execution_id: str, first_seq: int) -> Commit | None: ...

    def committed_after(self, execution_id: str, seq: int) -> bool:
        """Whether a commit holds a seq above `seq`, the last seq of a commit (a state's `last_seq`):
        one consistent read of the history's head, what a decision on a cached state pays before
        acting on it without a commit of its own."""
        ...

    def scan_commits(self, execution_id: str, newest_first: bool = True) -> Iterator[Commit]:
        """Every commit of the execution, one page at a time as the caller iterates (it stops
        when it has found what it looks for: a redelivered message's commit). Empty if none."""
        ...

    def history(self, execution_id: str, after_seq: int = 0, limit: int = 1000,
                values: bool = True) -> HistoryPage:
        """Recorded events with seq > after_seq, in order, at most `limit`. NotFound if none exist.
        `values=False`: large values kept in the payload store are not read (null in the records,
        their paths in `stored`); a store that keeps every value inline returns them all."""
        ...

    def save_snapshot(self, execution_id: str, state: dict[str, JSON], seq: int,
                      expires_at_s: int | None = None, provisional: bool = False) -> None:
        """Keep `state` (ExecutionState.to_dict()) as of `seq`; an older one never replaces a newer one."""
        ...

    def put_index(self, entry: IndexEntry, expires_at_s: int | None = None,
                  provisional: bool = False) -> None:
        ...

    def list_executions(
        self,
        workflow: str | None = None,
        status: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        started_after_ms: int | None = None,
        started_before_ms: int | None = None,
        id_prefix: str | None = None,
        where: dict[str, JSON] | None = None,
    ) -> tuple[list[IndexEntry], str | None]:
        """Newest first. Returns (entries, next cursor or None). `where`: search attributes that
        must all hold (stores may take only one condition: ValidationError for more).

        `started_after_ms` <= created < `started_before_ms`; `id_prefix` filters ids. A page may hold
        fewer than `limit` entries (even none) with a cursor: the store reads a bounded number of
        rows per call, so a rare prefix never makes one call read the whole index."""
        ...

    def search_executions(self, flt: Any, limit: int = 50,
                          cursor: str | None = None) -> tuple[list[IndexEntry], str | None]:
        """Newest first, the executions meeting every condition of `flt` (orbit.core.search.Filter);
        ValidationError for a filter that would read the whole table (`orbit.core.search.plan`).
        Like `list_executions`, a page may be short (even empty) with a cursor."""
        ...

    def count_executions(self, workflow: str | None = None, cap: int = COUNT_CAP) -> dict[str, int]:
        """Executions per status (statuses with none may be left out), each counted up to `cap`."""
        ...

    def put_hook(self, token: str, execution_id: str, name: str, expires_at_s: int | None = None,
                 provisional: bool = False) -> None:
        """Index a hook by `hook_key(token)`: the lookup item never holds the token itself."""
        ...

    def retire(self, execution_id: str, ended_at_ms: int, expires_at_s: int, hook_tokens: list[str],
               dedupe_keys: list[str], written: bool = False) -> None:
        """The execution ended: every item it left (commits, snapshot, index row, hooks, payload
        references) expires at `expires_at_s` (epoch seconds), provisional marks dropped; worker
        dedupe records (keys as in DispatchTask.idempotency_key, `cancel#<token>`) expire no later.
        `written`: it ended young and its items were all written with this expiry (its start
        recorded it: WorkflowCreated.provisional_expiry_s), so a store may skip them. Idempotent;
        a later write to an ended execution is followed by another call."""
        ...

    def aging(self, after: str | None, created_before_ms: int, limit: int) -> list[tuple[str, str]]:
        """(sort key, execution id) of RUNNING or COMPENSATING executions created before
        `created_before_ms` whose sort key (`created#id`, as listing orders them) is above `after`:
        oldest first, at most `limit`. The retention sweeper's work list."""
        ...

    def pin(self, execution_id: str, hook_tokens: list[str], until_s: int) -> int:
        """Every item of the execution still marked provisional (payload references and hooks
        included) expires at `until_s` instead, unmarked; conditional on the mark. Returns how many."""
        ...

    def sweep_cursor(self) -> str | None:
        """The sort key up to which the sweeper has pinned (None: from the start)."""
        ...

    def advance_sweep(self, cursor: str) -> None:
        """Move the sweeper's cursor forward (never back)."""
        ...

    def find_hook(self, token: str) -> tuple[str, str] | None:
        """(execution_id, hook name) for a hook token, or None."""
        ...


class Queues(Protocol):
    def send_decision(self, message: dict[str, JSON], delay_s: int = 0) -> None:
        """Enqueue an inbound message (orbit.core.history.messages shape) for the decider."""
        ...

    def send_task(self, queue: str, body: dict[str, JSON], delay_s: int = 0) -> None:
        """Enqueue a task message (a DispatchTask/CancelTask effect dict) on a worker queue."""
        ...


class Timers(Protocol):
    def arm(self, execution_id: str, fire_at_ms: int, seq: int | None = None) -> None:
        """Set the execution's one timer to `fire_at_ms`, derived from the state as of `seq` (the
        last seq of the commit that asked for it). It replaces the timer unless a newer commit set
        that one (its seq is above `seq`): a late resend of an old commit's timer is refused
        (docs/decisions/delivery-engine-timers.md). `seq` None: replace unconditionally."""
        ...

    def due(self, now_ms: int, limit: int = 100) -> list[tuple[str, int]]:
        """(execution_id, fire_at_ms) of timers due at `now_ms`, earliest first."""
        ...

    def disarm(self, execution_id: str, fire_at_ms: int | None = None) -> None:
        """Remove the timer; with `fire_at_ms`, only if it is still set to that time."""
        ...

    def next_fire_ms(self) -> int | None:
        """Earliest armed time (the simulator and local stack jump to it)."""
        ...


class PayloadStore(Protocol):
    def put(self, data: bytes) -> str: ...

    def get(self, ref: str) -> bytes: ...


class Archive(Protocol):
    """Ended executions' histories past their retention (orbit/service/archive.py has the format)."""

    def put(self, execution_id: str, data: bytes) -> None:
        """Store (or replace) the execution's archive object."""
        ...

    def get(self, execution_id: str) -> bytes | None:
        """The archive object's bytes, or None when there is none."""
        ...


class Clock(Protocol):
    def now_ms(self) -> int: ...


class Registry(Protocol):
    def register(self, workflow: Any) -> None: ...

    def get(self, name: str, version: str | None = None) -> Any:
        """The workflow (Definition or code workflow); latest version when None. UnknownWorkflow."""
        ...

    def get_build(self, name: str, version: str, build: str) -> Any:
        """Exactly the pinned build; BuildMismatch when only other builds exist."""
        ...


def hook_key(token: str) -> str:
    """What a store indexes a hook token by (SHA-256 hex): a hook token is a credential. The
    engine, which keeps only the hash, passes `sha256:<hex>` (hook_tokens.DIGEST_PREFIX) instead."""
    import hashlib

    from orbit.core.history.hook_tokens import DIGEST_PREFIX

    if token.startswith(DIGEST_PREFIX) and len(token) == len(DIGEST_PREFIX) + 64:
        return token[len(DIGEST_PREFIX):]
    return hashlib.sha256(token.encode()).hexdigest()
