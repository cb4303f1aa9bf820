"""A worker's look-backs at execution histories, at the cost of what changed (issue 27, section 2).

A possible duplicate, or a first delivery behind a backlog (`dedupe.waited`), asks whether its
attempt is still open, which needs the execution's state. Loading it is the latest snapshot plus
every commit since, which for a wide fan-out is the size of the fan-out: a 2,000-branch `ctx.map`
puts 2,000 task messages in the queue, and once the backlog is older than `OLD_MESSAGE_MS` every one
of them loaded the whole history, O(n^2) in all (the local stack did not reach idle in 120 s).

`Looks` keeps the state it folded last for a few executions and, on the next look, asks whether a
commit came since (`HistoryStore.committed_after`, one read of the head) and reads only the commits
after it (`HistoryStore.history(after_seq=)`) and applies their events: the same state a
full load folds, read at the cost of what changed. A read that fails drops the entry (the next look
loads again), so no half-applied state is ever used.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from orbit.core.history.effects import DispatchTask
from orbit.core.history.model import apply
from orbit.core.history.state import ExecutionState

KEEP = 16  # executions whose last folded state a worker keeps
PAGE = 1_000  # events per history page read


class Looks:
    """The last state read per execution (a bounded LRU), brought up to date at each look."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._states: OrderedDict[str, ExecutionState] = OrderedDict()
        self._lock = threading.Lock()
        self.loads = self.updates = 0  # full loads, incremental reads (for tests and benchmarks)

    def check(self, history: Any, d: DispatchTask, is_open: Any) -> bool:
        """`is_open(state, d)` on the execution's current state."""
        eid = d.execution_id
        with self._lock:
            state = self._states.pop(eid, None)  # kept again only if the read succeeds
            if state is None:
                state = history.load(eid).fold()
                self.loads += 1
            elif history.committed_after(eid, state.last_seq):  # one read of the head when nothing is new
                after = state.last_seq
                while True:
                    page = history.history(eid, after_seq=after, limit=PAGE)
                    for r in page.records:
                        apply(state, r)
                    if page.next_after_seq is None:
                        break
                    after = page.next_after_seq
                self.updates += 1
            self._states[eid] = state
            while len(self._states) > self.keep:
                self._states.popitem(last=False)
            return bool(is_open(state, d))
