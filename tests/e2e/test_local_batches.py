"""Bulk actions on the local stack (the real API and decider handlers on moto): 500 executions
cancelled by one batch whose page handler dies twice (once between acting and recording the
page, once in the middle of a page), and a combined search over the same executions."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from orbit.local import LocalStack
from orbit.service.batches import BatchService
from orbit.service.http import handle_request

WAITER = {"orbit": 1, "name": "bulk-waiter", "version": "1", "steps": {"w": {"wait_for": "go"}},
          "attributes": {"tier": "{% input.tier %}", "amount": "{% input.amount %}"}}
N = 500


@pytest.fixture(scope="module")
def stack() -> Any:
    with LocalStack(mode="inprocess") as st:
        st.register(WAITER)
        for i in range(N):
            st.start("bulk-waiter", {"tier": ["gold", "silver"][i % 2], "amount": i}, id=f"bulk-{i:03d}")
        st.run_until_idle()
        st.advance(1)
        yield st


def test_a_combined_search_on_the_table(stack: LocalStack) -> None:
    where = "workflow = bulk-waiter AND status = RUNNING AND tier = gold AND amount >= 100 AND amount < 120"
    status, body = handle_request(stack.engine, "GET", "/executions", query={"where": where, "limit": "1000"})
    assert status == 200, body
    found = sorted(e["execution_id"] for e in body["executions"])
    assert found == [f"bulk-{i:03d}" for i in range(100, 120, 2)]
    listed = stack.list(where="tier IN (silver) AND amount < 10 AND started > 0", limit=100)
    assert sorted(e["execution_id"] for e in listed) == [f"bulk-{i:03d}" for i in (1, 3, 5, 7, 9)]
    status, body = handle_request(stack.engine, "GET", "/executions", query={"where": "amount >= 100"})
    assert status == 400 and "would read the whole table" in body["error"]["message"]


def test_a_bulk_cancel_of_500_interrupted_by_crashes_acts_once_on_each(
        stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> None:
    crashed: Counter[str] = Counter()
    real_advance, real_act = BatchService._advance, BatchService._act

    def advance(self: BatchService, batch_id: str, page: int, *a: Any) -> None:
        if page == 2 and not crashed["advance"]:  # acted on page 2, died before recording it
            crashed["advance"] += 1
            raise RuntimeError("the decider died before recording page 2")
        real_advance(self, batch_id, page, *a)

    def act(self: BatchService, b: dict[str, Any], eid: str) -> Any:
        if b["page"] == 3 and eid == b["pending"][50] and not crashed["act"]:
            crashed["act"] += 1  # half of page 3 acted on
            raise RuntimeError("the decider died in the middle of page 3")
        return real_act(self, b, eid)

    monkeypatch.setattr(BatchService, "_advance", advance)
    monkeypatch.setattr(BatchService, "_act", act)
    status, body = handle_request(stack.engine, "POST", "/batches/preview",
                                  {"where": "workflow = bulk-waiter AND status = RUNNING"})
    assert status == 200 and body["count"] == N
    status, body = handle_request(stack.engine, "POST", "/batches/cancel", {
        "where": "workflow = bulk-waiter AND status = RUNNING", "id": "b500",
        "reason": "bulk"})
    assert status == 202, body
    for _ in range(10):  # each failed page message comes back after the queue's visibility timeout
        stack.run_until_idle()
        if stack.describe_batch("b500")["status"] != "RUNNING":
            break
        stack.advance(300)
    b = stack.describe_batch("b500")
    assert crashed == {"advance": 1, "act": 1}
    assert b["status"] == "COMPLETED" and b["seen"] == N and b["failed"] == 0, b
    assert b["acted"] + b["skipped"] == N and b["pages"] == 5  # 5 pages of 100 (the last: no cursor after it)
    for i in range(N):
        h = stack.history(f"bulk-{i:03d}")
        cancels = [e for e in h if e["type"] == "CancelRequested"]
        assert len(cancels) == 1 and h[-1]["type"] == "WorkflowCancelled", (i, [e["type"] for e in h])
