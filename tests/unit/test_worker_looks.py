"""A worker's look-backs read what changed, not the whole history (worker/looks.py, issue 27).

A task message behind a backlog asks whether its attempt is still open. Each such look used to load
the execution's whole history: at a 2,000-branch fan-out that made the local stack quadratic. The
`Looks` of a worker keeps the state it read and reads only the commits after it.
"""

from __future__ import annotations

from typing import Any

from code_harness import Harness
from orbit.service.inline import dispatch_of
from orbit.worker import dedupe
from orbit.worker.looks import Looks
from orbit.workflow import CodeRegistry, workflow

REG = CodeRegistry()
N = 200


@workflow("looks-fan", registry=REG)
def fan(ctx: Any, n: int) -> int:
    return len(ctx.map(list(range(n)), lambda c, i: c.step("looks.echo", i)))


class Counted:
    """The store, with its reads counted."""

    def __init__(self, store: Any) -> None:
        self.store, self.loads, self.heads, self.pages = store, 0, 0, 0

    def load(self, eid: str) -> Any:
        self.loads += 1
        return self.store.load(eid)

    def committed_after(self, eid: str, seq: int) -> bool:
        self.heads += 1
        return bool(self.store.committed_after(eid, seq))

    def history(self, eid: str, after_seq: int = 0, limit: int = 1000) -> Any:
        self.pages += 1
        return self.store.history(eid, after_seq=after_seq, limit=limit)


def test_looks_read_the_history_once_then_only_what_changed_and_agree_with_a_full_load() -> None:
    h = Harness(fan, workers={"looks.echo": lambda i, attempt: i})
    h.held.add("looks.echo")  # every task stays in flight: N attempts open
    eid = h.start("looks-fan", N)
    store = Counted(h.engine.store)
    state = store.load(eid).fold()
    store.loads = 0
    units = [k for k in state.active if k.endswith("looks.echo")]
    assert len(units) == N
    ds = [dispatch_of(state, u) for u in units]
    looks = Looks()
    assert all(dedupe.is_open(store, d, looks=looks) for d in ds[:50])
    assert (store.loads, store.heads, store.pages) == (1, 49, 0)  # nothing new: one read of the head each

    h.answer_parked()  # every task answers: the execution moves on, commits come after the kept state
    assert h.describe(eid)["status"] == "COMPLETED"
    assert not any(dedupe.is_open(store, d, looks=looks) for d in ds[:50])  # answered: a copy is acked
    assert store.loads == 1 and store.pages >= 1  # read from where it stood, never loaded again
    fresh = Counted(h.engine.store)
    assert [dedupe.is_open(fresh, d) for d in ds] == [dedupe.is_open(store, d, looks=looks) for d in ds]
    assert looks.loads == 1
