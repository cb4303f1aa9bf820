"""The decider's per-process cache of execution states, and the reads that check it against the history.

A cached state is advanced in place by each decision of this process and trusted optimistically: a
commit derived from it is conditional on its next seq, so another process's newer commit makes it
conflict, and the engine drops the entry on any failure. Whatever acts on a cached state without a
commit (a no-op, a re-arm, a resend) first checks the head with one consistent read
(`overtaken`, `reload_if_overtaken`): a cache is only an optimisation
(docs/decisions/chaos-fix-n1-n2-n3.md).
"""

from __future__ import annotations

from collections import OrderedDict

from orbit.core.history.state import ExecutionState
from orbit.errors import NotFound
from orbit.service.ports import HistoryStore


class StateCache(OrderedDict[str, tuple[ExecutionState, int]]):
    """execution id -> (state, commits since its snapshot), least recently used first."""

    def __init__(self, store: HistoryStore, size: int) -> None:
        super().__init__()
        self.store, self.size = store, size

    def state(self, eid: str) -> ExecutionState | None:
        """The cached state of the execution, or None."""
        cached = self.get(eid)
        return cached[0] if cached is not None else None

    def take(self, eid: str, create: bool, assume_new: bool = False) -> tuple[ExecutionState, int]:
        """The cached entry, taken out of the cache, else the stored state (a blank one when `create`
        and there is none; `assume_new`: blank without a read). NotFound otherwise."""
        cached = self.pop(eid, None)
        if cached is not None:
            return cached
        if assume_new:
            return ExecutionState(eid), 0
        try:
            loaded = self.store.load(eid)
        except NotFound:
            if not create:
                raise
            return ExecutionState(eid), 0
        return loaded.fold(), len(loaded.commits)

    def keep(self, eid: str, state: ExecutionState, since_snapshot: int) -> None:
        """Cache `state` as the newest entry; the least recently used go past `size`."""
        self[eid] = (state, since_snapshot)
        while len(self) > self.size:
            self.popitem(last=False)

    def current(self, eid: str) -> ExecutionState:
        """The cached state (moved to the front of the cache), else the stored one, now cached."""
        state, since_snapshot = self.take(eid, create=False)
        self.keep(eid, state, since_snapshot)
        return state

    def committed_after(self, eid: str, seq: int) -> bool:
        """Whether the history holds a commit after `seq`: one consistent read of the head."""
        after = getattr(self.store, "committed_after", None)
        if after is not None:
            return bool(after(eid, seq))
        return bool(self.store.history(eid, seq, 1).records)

    def overtaken(self, eid: str, state: ExecutionState) -> bool:
        """Whether a newer commit than the (cached) state's last one exists."""
        return self.committed_after(eid, state.last_seq)

    def reload_if_overtaken(self, eid: str, state: ExecutionState) -> ExecutionState:
        """`state` if no newer commit exists, else the stored state, now cached."""
        if not self.overtaken(eid, state):
            return state
        self.pop(eid, None)
        return self.current(eid)

    def stored_after(self, eid: str, seq: int | None) -> ExecutionState | None:
        """The stored state, past the cache, if a commit after `seq` exists (`seq` None: read
        anyway), else None. NotFound: no such execution."""
        if seq is not None and not self.committed_after(eid, seq):
            return None
        return self.store.load(eid).fold()
