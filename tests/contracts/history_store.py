"""The HistoryStore contract. Subclass `HistoryStoreContract` and implement `make_store()`.

Every backend (memory, DynamoDB on moto) must pass the same checks: a
duplicate seq is refused with ConflictError and changes nothing, a commit is
all-or-nothing, history pages in order, snapshots never go backwards, and the
inbound ids of each commit come back through `load` so redeliveries are found.
"""

from __future__ import annotations

from typing import Any

import pytest
from orbit.core.history.effects import ArmTimer, DispatchTask
from orbit.core.history.events import Recorded, StepScheduled, StepSucceeded, WorkflowCreated, WorkflowStarted
from orbit.core.history.state import ExecutionState
from orbit.errors import ConflictError, NotFound
from orbit.service.ports import Commit, IndexEntry


def created(seq: int = 1) -> Recorded:
    return Recorded(seq, 1000, WorkflowCreated("wf", "1", "sha256:x", {"a": 1}))


def commit_of(
    first: int,
    n: int,
    inbound: str | None = None,
    effects: list[Any] | None = None,
    extra: tuple[str, ...] = (),
) -> Commit:
    events = []
    for i in range(n):
        seq = first + i
        ev = (
            created(seq).event
            if seq == 1
            else (WorkflowStarted() if seq == 2 else StepSucceeded(f"s{seq}", 1, {"v": seq}))
        )
        events.append(Recorded(seq, 1000 + seq, ev))
    return Commit(first, 1000 + first, inbound, events, effects or [], extra)


class HistoryStoreContract:
    def make_store(self) -> Any:  # pragma: no cover - subclasses provide it
        raise NotImplementedError

    @pytest.fixture
    def store(self) -> Any:
        return self.make_store()

    def test_load_unknown_raises_not_found(self, store: Any) -> None:
        with pytest.raises(NotFound):
            store.load("nope")

    def test_commit_then_load_round_trips(self, store: Any) -> None:
        eff = [
            DispatchTask("e", "a", "t.x", "t", {"k": [1, 2]}, 1, "tok", "e:a", None, False),
            ArmTimer("e", 5),
        ]
        store.commit("e", commit_of(1, 2, "m1", eff))
        loaded = store.load("e")
        assert loaded.snapshot_seq == 0
        assert [c.first_seq for c in loaded.commits] == [1]
        c = loaded.commits[0]
        assert [r.seq for r in c.events] == [1, 2]
        assert c.events[0].event == WorkflowCreated("wf", "1", "sha256:x", {"a": 1})
        assert c.effects == eff and c.inbound_id == "m1" and c.timestamp_ms == 1001
        state = loaded.fold()
        assert state.workflow == "wf" and state.last_seq == 2 and state.inbound == {"m1": 1}

    def test_duplicate_seq_is_refused_and_changes_nothing(self, store: Any) -> None:
        store.commit("e", commit_of(1, 2, "m1"))
        with pytest.raises(ConflictError) as info:
            store.commit("e", commit_of(1, 3, "m2"))
        assert info.value.seq == 1
        with pytest.raises(ConflictError):
            store.commit("e", commit_of(2, 1, "m3"))  # overlaps the first commit's seq 2
        page = store.history("e")
        assert [r.seq for r in page.records] == [1, 2]
        assert store.load("e").fold().inbound == {"m1": 1}

    def test_committed_after_tells_whether_the_head_moved_past_a_seq(self, store: Any) -> None:
        assert not store.committed_after("e", 0)  # nothing committed yet
        store.commit("e", commit_of(1, 2))
        store.commit("e", commit_of(3, 2, "m2"))
        store.save_snapshot("e", ExecutionState("e").to_dict(), 4)  # a snapshot is not a commit
        assert store.committed_after("e", 0) and store.committed_after("e", 2)  # the states after each commit
        assert not store.committed_after("e", 4)
        assert not store.committed_after("other", 0)

    def test_commit_is_atomic_across_events(self, store: Any) -> None:
        store.commit("e", commit_of(1, 2))
        store.commit("e", commit_of(3, 5, "m2"))
        with pytest.raises(ConflictError):
            store.commit("e", commit_of(3, 4, "m3"))
        assert [r.seq for r in store.history("e").records] == [1, 2, 3, 4, 5, 6, 7]
        assert store.read_commit("e", 3).inbound_id == "m2"
        assert store.read_commit("e", 4) is None

    def test_history_pages_in_order(self, store: Any) -> None:
        store.commit("e", commit_of(1, 2))
        store.commit("e", commit_of(3, 3))
        store.commit("e", commit_of(6, 4))
        seen, cursor = [], 0
        while cursor is not None:
            page = store.history("e", cursor, 3)
            assert len(page.records) <= 3
            seen += [r.seq for r in page.records]
            cursor = page.next_after_seq
        assert seen == list(range(1, 10))
        assert [r.seq for r in store.history("e", 4, 2).records] == [5, 6]
        assert store.history("e", 9, 10).records == [] and store.history("e", 9, 10).next_after_seq is None

    def test_snapshot_then_commits_after_it(self, store: Any) -> None:
        store.commit("e", commit_of(1, 2, "m1"))
        s = store.load("e").fold()
        store.save_snapshot("e", s.to_dict(), 2)
        store.commit("e", commit_of(3, 1, "m2"))
        loaded = store.load("e")
        assert loaded.snapshot_seq == 2 and [c.first_seq for c in loaded.commits] == [3]
        state = loaded.fold()
        assert state.last_seq == 3 and state.inbound == {"m1": 1, "m2": 3}
        assert state.units["s3"].status == "SUCCEEDED"

    def test_older_snapshot_never_replaces_newer(self, store: Any) -> None:
        store.commit("e", commit_of(1, 2))
        store.commit("e", commit_of(3, 2))
        full = store.load("e").fold()
        store.save_snapshot("e", full.to_dict(), 4)
        store.save_snapshot("e", ExecutionState("e").to_dict(), 2)
        loaded = store.load("e")
        assert loaded.snapshot_seq == 4 and loaded.commits == []
        assert loaded.fold().to_dict() == full.to_dict()

    def test_batch_commit_lists_every_inbound_id(self, store: Any) -> None:
        store.commit("e", commit_of(1, 2, "m1", extra=("m2", "m3")))
        assert store.load("e").fold().inbound == {"m1": 1, "m2": 1, "m3": 1}
        assert store.read_commit("e", 1).inbound_ids == ("m2", "m3")

    def test_scan_commits_pages_both_ways_and_stops_when_the_caller_does(self, store: Any) -> None:
        first = 1
        for i in range(20):  # more than one page of the DynamoDB adapter (8 commits)
            n = 2 if i % 3 == 0 else 1
            store.commit("e", commit_of(first, n, f"m{i}"))
            first += n
        store.commit("other", commit_of(1, 2, "x"))
        newest = [c.inbound_id for c in store.scan_commits("e")]
        assert newest == [f"m{i}" for i in reversed(range(20))]
        oldest = list(store.scan_commits("e", newest_first=False))
        assert [c.inbound_id for c in oldest] == [f"m{i}" for i in range(20)]
        assert oldest[3].first_seq == 5 and [r.seq for r in oldest[3].events] == [5, 6]  # whole, decoded
        it = store.scan_commits("e")
        assert next(it).inbound_id == "m19"  # lazily: the caller stops after the first
        assert list(store.scan_commits("nope")) == []

    def test_executions_are_independent(self, store: Any) -> None:
        store.commit("a", commit_of(1, 2))
        store.commit("b", commit_of(1, 2))
        assert [r.seq for r in store.history("b").records] == [1, 2]

    def test_index_lists_newest_first_and_filters(self, store: Any) -> None:
        for i, (wf, status) in enumerate([("w1", "RUNNING"), ("w2", "COMPLETED"), ("w1", "COMPLETED")]):
            store.put_index(IndexEntry(f"e{i}", wf, "1", status, 1000 + i, 1000 + i))
        rows, _ = store.list_executions()
        assert [r.execution_id for r in rows] == ["e2", "e1", "e0"]
        rows, _ = store.list_executions(workflow="w1")
        assert [r.execution_id for r in rows] == ["e2", "e0"]
        rows, _ = store.list_executions(status="COMPLETED")
        assert {r.execution_id for r in rows} == {"e1", "e2"}
        store.put_index(IndexEntry("e0", "w1", "1", "FAILED", 1000, 2000))
        rows, _ = store.list_executions(status="RUNNING")
        assert rows == []
        first, cursor = store.list_executions(limit=2)
        assert len(first) == 2 and cursor is not None
        rest, cursor2 = store.list_executions(limit=2, cursor=cursor)
        assert [r.execution_id for r in first + rest] == ["e2", "e1", "e0"] and cursor2 is None

    def test_index_filters_by_start_time_and_id_prefix_and_counts(self, store: Any) -> None:
        rows = [("ord-1", "w1", "COMPLETED", 1000), ("ord-2", "w1", "RUNNING", 2000),
                ("pay-1", "w2", "COMPLETED", 3000), ("ord-3", "w2", "FAILED", 4000)]
        for eid, wf, status, at in rows:
            store.put_index(IndexEntry(eid, wf, "1", status, at, at))

        def ids(**kw: Any) -> list[str]:
            out, cursor = [], None
            for _ in range(20):  # a page may be short: follow the cursor to the end
                page, cursor = store.list_executions(cursor=cursor, **kw)
                out += [r.execution_id for r in page]
                if cursor is None:
                    return out
            raise AssertionError("the cursor never ended")

        assert ids(started_after_ms=2000) == ["ord-3", "pay-1", "ord-2"]
        assert ids(started_before_ms=3000) == ["ord-2", "ord-1"]
        assert ids(started_after_ms=2000, started_before_ms=4000) == ["pay-1", "ord-2"]
        assert ids(id_prefix="ord-") == ["ord-3", "ord-2", "ord-1"]
        assert ids(id_prefix="ord-", workflow="w1", limit=1) == ["ord-2", "ord-1"]
        assert ids(id_prefix="ord-", status="COMPLETED") == ["ord-1"]
        assert ids(id_prefix="ord-", started_before_ms=2000, limit=1) == ["ord-1"]
        assert ids(id_prefix="nope") == []
        assert store.count_executions() == {"COMPLETED": 2, "RUNNING": 1, "FAILED": 1}
        assert store.count_executions("w1") == {"COMPLETED": 1, "RUNNING": 1}
        assert store.count_executions(cap=1) == {"COMPLETED": 1, "RUNNING": 1, "FAILED": 1}

    def test_a_combined_filter_lists_what_meets_every_condition(self, store: Any) -> None:
        from orbit.core.search import parse

        rows = [("ord-1", "w1", "COMPLETED", 1000, 1500, {"tier": "gold", "amount": 50}),
                ("ord-2", "w1", "RUNNING", 2000, 2000, {"tier": "gold", "amount": 150}),
                ("pay-1", "w2", "COMPLETED", 3000, 9000, {"tier": "silver", "amount": 500}),
                ("ord-3", "w2", "FAILED", 4000, 4500, {"tier": "gold", "amount": 900}),
                ("ord-4", "w1", "CANCELLED", 5000, 5100, None)]
        for eid, wf, status, at, upd, attrs in rows:
            store.put_index(IndexEntry(eid, wf, "1", status, at, upd, None, attrs))

        def ids(text: str, limit: int = 50) -> list[str]:
            out, cursor = [], None
            for _ in range(20):
                page, cursor = store.search_executions(parse(text), limit, cursor)
                out += [r.execution_id for r in page]
                if cursor is None:
                    return out
            raise AssertionError("the cursor never ended")

        assert ids("tier = gold") == ["ord-3", "ord-2", "ord-1"]
        assert ids("tier = gold AND amount > 100", limit=1) == ["ord-3", "ord-2"]
        assert ids("tier IN (gold, silver) AND amount >= 500") == ["ord-3", "pay-1"]
        assert ids("tier = gold AND amount != 150 AND workflow = w1") == ["ord-1"]
        assert ids("status IN (COMPLETED, FAILED) AND id STARTS_WITH ord-") == ["ord-3", "ord-1"]
        assert ids("status != RUNNING AND ended < 5000", limit=1) == ["ord-3", "ord-1"]
        assert ids("workflow = w1 AND started > 1000 AND started <= 5000") == ["ord-4", "ord-2"]
        assert ids("workflow IN (w1, w2) AND status = COMPLETED AND ended >= 2000") == ["pay-1"]
        assert ids("started >= 3000 AND workflow != w2") == ["ord-4"]
        assert ids("status = RUNNING AND ended > 0") == []  # running: it has not ended
        assert ids("tier = gold AND started < 2000") == ["ord-1"]

    def test_hooks_resolve_tokens(self, store: Any) -> None:
        assert store.find_hook("t" * 32) is None
        store.put_hook("t" * 32, "e", "approval")
        assert store.find_hook("t" * 32) == ("e", "approval")

    def test_scheduled_event_fields_survive(self, store: Any) -> None:
        ev = StepScheduled(
            "ship[3]",
            2,
            {"sku": "x"},
            "e:ship[3]",
            True,
            "tok",
            "task",
            "ship.it",
            "ship",
            {"max_attempts": 3},
            1000,
            None,
            5000,
            "continue_workflow",
            True,
        )
        store.commit("e", Commit(1, 1, None, [created(1), Recorded(2, 1, ev)], []))
        assert store.history("e").records[1].event == ev

    def test_the_sweeper_lists_aging_executions_and_pins_only_provisional_items(self, store: Any) -> None:
        for eid, status, at in [("e1", "RUNNING", 1000), ("e2", "COMPENSATING", 2000),
                                ("e3", "COMPLETED", 1500), ("e4", "RUNNING", 5000)]:
            store.put_index(IndexEntry(eid, "wf", "1", status, at, at))
        listed = store.aging(None, 3000, 10)
        assert [eid for _, eid in listed] == ["e1", "e2"] and listed == sorted(listed)
        assert store.aging(None, 3000, 1) == listed[:1]
        assert store.aging(listed[0][0], 3000, 10) == listed[1:]
        assert store.aging(listed[1][0], 3000, 10) == []
        assert store.aging(listed[1][0], 1000, 10) == []  # a clock behind the cursor: nothing
        assert store.sweep_cursor() is None
        store.advance_sweep(listed[1][0])
        store.advance_sweep(listed[0][0])  # never backwards
        assert store.sweep_cursor() == listed[1][0]
        store.commit("e1", commit_of(1, 2), 7_000, True)  # young: the provisional expiry
        store.put_hook("h" * 32, "e1", "approval", 7_000, True)
        assert store.pin("e1", ["h" * 32], 9_000) > 0
        assert store.pin("e1", ["h" * 32], 9_000) == 0  # nothing is marked any more
        assert store.load("e1").expires_at_s == 9_000
        store.commit("e1", commit_of(3, 1), 8_000)  # it ended: the exact expiry, unmarked
        store.retire("e1", 3_000, 8_000, ["h" * 32], [])
        assert store.pin("e1", ["h" * 32], 9_000) == 0 and store.load("e1").expires_at_s == 8_000
        # (a young end leaves its earlier items marked: the sweeper skips ended executions by
        # their state, service/retention.py)
