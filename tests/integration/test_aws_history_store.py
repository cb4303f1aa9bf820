"""The shared HistoryStore contract, run against DynamoDB (moto) - plus what only DynamoDB has."""

from __future__ import annotations

from typing import Any

import pytest
from aws_resources import Stack
from orbit.adapters.dynamodb import DynamoHistoryStore
from orbit.adapters.s3 import S3PayloadStore
from orbit.core.history.events import Recorded, StepSucceeded
from orbit.errors import ConflictError
from orbit.service.ports import Commit

from tests.contracts.history_store import HistoryStoreContract, commit_of


class TestDynamoHistoryStore(HistoryStoreContract):
    @pytest.fixture(autouse=True)
    def _stack(self, stack: Stack, clients: Any) -> None:
        self._made = (stack, clients)

    def make_store(self) -> Any:
        stack, clients = self._made
        return DynamoHistoryStore(clients.dynamodb, stack.table, S3PayloadStore(clients.s3, stack.bucket),
                                  page_size=4)

    @pytest.mark.xfail(strict=True, reason=(
        "one conditional PutItem per commit, keyed by its first seq, refuses a second commit at the same "
        "first seq (every race between deciders that loaded a real state), but not a commit that starts "
        "inside an existing one: no decider can load a state that ends mid-commit, and refusing it would "
        "need a transaction (4x the write cost) or a read before every commit"))
    def test_commit_starting_inside_another_is_refused(self, store: Any) -> None:
        store.commit("e", commit_of(1, 2, "m1"))
        with pytest.raises(ConflictError):
            store.commit("e", commit_of(2, 1, "m3"))

    def test_duplicate_seq_is_refused_and_changes_nothing(self, store: Any) -> None:
        # The contract's version also writes a commit starting inside another (see the xfail above).
        store.commit("e", commit_of(1, 2, "m1"))
        with pytest.raises(ConflictError) as info:
            store.commit("e", commit_of(1, 3, "m2"))
        assert info.value.seq == 1 and "m1" in str(info.value)  # ALL_OLD names the winner
        assert [r.seq for r in store.history("e").records] == [1, 2]
        assert store.load("e").fold().inbound == {"m1": 1}

    def test_load_reads_a_bounded_number_of_items(self, store: Any, clients: Any) -> None:
        """However long the history, a load reads the snapshot and the commits after it."""
        for i in range(1, 61):
            store.commit("e", commit_of(i, 1, f"m{i}") if i > 1 else commit_of(1, 1, "m1"))
            if i == 50:
                store.save_snapshot("e", store.load("e").fold().to_dict(), 50)
        calls: list[dict[str, Any]] = []
        clients.dynamodb.meta.events.register("provide-client-params.dynamodb.Query",
                                              lambda params, **_: calls.append(params))
        try:
            loaded = store.load("e")
        finally:
            clients.dynamodb.meta.events.unregister("provide-client-params.dynamodb.Query")
        assert loaded.snapshot_seq == 50 and [c.first_seq for c in loaded.commits] == list(range(51, 61))
        assert len(calls) == 3  # 12 items (snapshot + 10 commits + the covered one) in pages of 4
        assert loaded.fold().last_seq == 60

    def test_large_commit_spills_to_s3_and_reads_back(self, store: Any, stack: Stack, clients: Any) -> None:
        import os

        blob = os.urandom(600_000).hex()  # incompressible: 1.2 MB of JSON, over DynamoDB's 400 KB item limit
        big = Commit(1, 5, "m1", [Recorded(1, 5, StepSucceeded("s", 1, {"blob": blob}))], [])
        store.commit("e", big)
        item = clients.dynamodb.get_item(TableName=stack.table,
                                         Key={"pk": {"S": "EXEC#e"}, "sk": {"S": "C#000000000001"}})["Item"]
        # The large value went to S3 on its own (adapters/payload_values.py); the item references it.
        assert item["vref"] == {"N": "1"} and "ref" not in item
        assert store.read_commit("e", 1).events[0].event.output == {"blob": blob}

    def test_index_lists_current_status_by_workflow_and_by_both(self, store: Any) -> None:
        # gsi1 (by workflow) projects only the fixed part of a row: the status must come from the row.
        from orbit.service.ports import IndexEntry

        store.put_index(IndexEntry("a", "w1", "1", "RUNNING", 1000, 1000, "p"))
        store.put_index(IndexEntry("b", "w1", "1", "RUNNING", 1001, 1001))
        store.put_index(IndexEntry("c", "w2", "1", "RUNNING", 1002, 1002))
        store.put_index(IndexEntry("a", "w1", "1", "COMPLETED", 1000, 3000, "p"))
        store.put_index(IndexEntry("a", "w1", "1", "RUNNING", 1000, 2000, "p"))  # late, older: ignored
        rows, _ = store.list_executions(workflow="w1")
        assert [(r.execution_id, r.status, r.updated_at_ms, r.parent_id) for r in rows] == [
            ("b", "RUNNING", 1001, None), ("a", "COMPLETED", 3000, "p")]
        rows, _ = store.list_executions(workflow="w1", status="RUNNING")
        assert [r.execution_id for r in rows] == ["b"]
        rows, _ = store.list_executions(workflow="w2", status="COMPLETED")
        assert rows == []
        first, cursor = store.list_executions(workflow="w1", limit=1)
        rest, end = store.list_executions(workflow="w1", limit=1, cursor=cursor)
        assert [r.execution_id for r in first + rest] == ["b", "a"] and end is None


@pytest.mark.parametrize("token", ["tok-3f9a1c7d5e2b4a6c8d0e1f2a3b4c5d6e", "Zm9vYmFyYmF6cXV4cXV1eA"])
def test_the_hook_lookup_item_holds_a_digest_never_the_token(stack: Stack, clients: Any, token: str) -> None:
    store = DynamoHistoryStore(clients.dynamodb, stack.table, S3PayloadStore(clients.s3, stack.bucket))
    store.put_hook(token, "e-1", "approval")
    assert store.find_hook(token) == ("e-1", "approval")
    assert store.claim_hook(token, {"ok": 1}) and not store.claim_hook(token, {"ok": 2})
    items = clients.dynamodb.scan(TableName=stack.table)["Items"]
    assert items and token not in repr(items)
    assert store.find_hook(token[:-1]) is None


def test_a_rare_id_prefix_reads_a_bounded_number_of_rows_per_call(
    stack: Stack, clients: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each list call stops after SCAN_BUDGET rows per partition and hands back a cursor, so a prefix
    that matches one old execution among many never makes one call read the whole index."""
    from orbit.adapters.dynamodb import index
    from orbit.service.ports import IndexEntry

    monkeypatch.setattr(index, "SCAN_BUDGET", 10)
    store = DynamoHistoryStore(clients.dynamodb, stack.table, S3PayloadStore(clients.s3, stack.bucket))
    store.put_index(IndexEntry("needle", "w", "1", "COMPLETED", 1, 1))
    for i in range(45):
        store.put_index(IndexEntry(f"hay-{i:02d}", "w", "1", "COMPLETED", 100 + i, 100 + i))
    calls, found, cursor = 0, [], None
    while True:
        calls += 1
        page, cursor = store.list_executions(status="COMPLETED", limit=5, cursor=cursor, id_prefix="needle")
        found += [e.execution_id for e in page]
        if cursor is None:
            break
    assert found == ["needle"] and calls >= 4  # short (empty) pages with a cursor, then the match


def test_a_request_id_is_claimed_once_per_run_and_another_request_is_named(stack: Stack,
                                                                             clients: Any) -> None:
    """A signal or update id held at acceptance (service/request_claims.py): the same request again
    holds it, another name or payload gets the holder's name, and a later run under the same
    execution id starts afresh."""
    store = DynamoHistoryStore(clients.dynamodb, stack.table, S3PayloadStore(clients.s3, stack.bucket))
    assert store.claim_request("e-1", 100, "signal:s1", "go", "d1", 2_000_000_000) is None
    assert store.claim_request("e-1", 100, "signal:s1", "go", "d1", 2_000_000_000) is None  # a retry
    assert store.claim_request("e-1", 100, "signal:s1", "go", "d2", 2_000_000_000) == "go"
    assert store.claim_request("e-1", 100, "signal:s1", "stop", "d1", 2_000_000_000) == "go"
    assert store.claim_request("e-1", 100, "update:s1", "add", "d2", 2_000_000_000) is None  # its own kind
    assert store.claim_request("e-2", 100, "signal:s1", "stop", "d2", 2_000_000_000) is None
    assert store.claim_request("e-1", 200, "signal:s1", "stop", "d2", 2_000_000_000) is None  # a new run
    assert store.claim_request("e-1", 200, "signal:s1", "go", "d1", 2_000_000_000) == "stop"
