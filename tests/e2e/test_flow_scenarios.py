"""Flow control on the local stack (the real handlers on moto, virtual clock; docs/flow-control.md):
a per-customer concurrency of 1 with 3 customers, a partner rate limit, priority overtaking bulk
work, and two tenants behind one limit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from orbit.local import LocalStack
from orbit.worker import task


@task("flowe2e.call")
def call(input: Any, ctx: Any) -> Any:
    return {"ok": True}


def wf(name: str, **top: Any) -> dict[str, Any]:
    return {
        "orbit": 1,
        "name": name,
        "version": "1",
        **top,
        "steps": {
            "call": {"task": "flowe2e.call", "input": "{% input %}"},
            "hold": {"sleep": "10s", "after": ["call"]},
        },
    }


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(mode="inprocess") as s:
        yield s


def finish(stack: LocalStack, ids: list[str]) -> None:
    for _ in range(200):
        stack.run_until_idle()
        if all(stack.describe(e)["status"] == "COMPLETED" for e in ids if _exists(stack, e)) and all(
            _exists(stack, e) for e in ids
        ):
            return
        stack.advance(5)
    raise AssertionError({e: stack.describe(e)["status"] for e in ids})


def _exists(stack: LocalStack, eid: str) -> bool:
    return stack.describe(eid)["status"] != "WAITING"


def runs(stack: LocalStack, ids: list[str]) -> list[tuple[int, int, str]]:
    out = []
    for e in ids:
        h = stack.history(e)
        out.append(
            (
                h[0]["timestamp_ms"],
                next(r["timestamp_ms"] for r in h if r["type"] == "WorkflowCompleted"),
                e,
            )
        )
    return sorted(out)


def test_per_customer_concurrency_of_one_with_three_customers(stack: LocalStack) -> None:
    stack.register(wf("fe2e-onboard", concurrency={"limit": 1, "key": "{% input.customer %}"}))
    ids = {
        c: [stack.start("fe2e-onboard", {"customer": c}, id=f"fe2e-{c}{i}") for i in range(3)]
        for c in "xyz"
    }
    assert stack.describe("fe2e-x2")["status"] == "WAITING"
    finish(stack, [e for group in ids.values() for e in group])
    for group in ids.values():
        spans = runs(stack, group)
        assert [e for _, _, e in spans] == group  # in the order they were started
        assert all(spans[i][1] <= spans[i + 1][0] for i in range(2))  # never two at once


def test_partner_rate_limit(stack: LocalStack) -> None:
    stack.register(
        {
            **wf("fe2e-rated"),
            "tasks": {
                "flowe2e.call": {
                    "rate": {"limit": 1, "period": "2s", "burst": 2, "key": "{% input.partner %}"}
                }
            },
        }
    )
    ids = [stack.start("fe2e-rated", {"partner": "globex", "i": i}, id=f"fe2e-r{i}") for i in range(6)]
    finish(stack, ids)
    sent = sorted(
        next(r["timestamp_ms"] for r in stack.history(e) if r["type"] == "StepDispatched") for e in ids
    )
    for w in sent:  # any 4 s window: at most 2 (burst) + 4 s x 1 per 2 s
        assert sum(1 for t in sent if w <= t < w + 4000) <= 4
    assert sent[-1] - sent[0] >= 6000  # 6 calls at 1 per 2 s after a burst of 2 take at least 8 s of tokens


def test_priority_overtakes_bulk_work(stack: LocalStack) -> None:
    stack.register(wf("fe2e-jobs", concurrency={"limit": 1}, priority="{% input.urgent ? 1 : 5 %}"))
    ids = [stack.start("fe2e-jobs", {"urgent": False}, id=f"fe2e-bulk{i}") for i in range(3)]
    ids.append(stack.start("fe2e-jobs", {"urgent": True}, id="fe2e-urgent"))
    finish(stack, ids)
    assert [e for _, _, e in runs(stack, ids)] == ["fe2e-bulk0", "fe2e-urgent", "fe2e-bulk1", "fe2e-bulk2"]


def test_two_tenants_behind_one_limit(stack: LocalStack) -> None:
    stack.register(wf("fe2e-fair", concurrency={"limit": 1, "fairness": {"key": "{% input.tenant %}"}}))
    ids = [stack.start("fe2e-fair", {"tenant": "big"}, id=f"fe2e-big{i}") for i in range(6)]
    ids += [stack.start("fe2e-fair", {"tenant": "small"}, id=f"fe2e-small{i}") for i in range(2)]
    finish(stack, ids)
    order = [e for _, _, e in runs(stack, ids)]
    assert max(order.index("fe2e-small0"), order.index("fe2e-small1")) <= 4  # not after all of big's
    listed = {(r["limit"], r["key"]): r for r in stack.engine.limits()["limits"]}
    assert (
        listed[("workflow:fe2e-fair", "")]["held"] == 0
        and listed[("workflow:fe2e-fair", "")]["waiting"] == 0
    )


@task("flowe2e.partner")
def partner(input: Any, ctx: Any) -> Any:
    return {"ok": True}


def test_a_task_limit_holds_workflows_that_do_not_declare_it(stack: LocalStack) -> None:
    limit = {"flowe2e.partner": {"concurrency": {"limit": 1, "key": "{% input.partner %}"}}}
    step = {"call": {"task": "flowe2e.partner", "input": "{% input %}"}}
    stack.register({"orbit": 1, "name": "fe2e-declares", "version": "1", "tasks": limit, "steps": step})
    stack.register({"orbit": 1, "name": "fe2e-silent", "version": "1", "steps": step})
    ids = [stack.start("fe2e-declares", {"partner": "globex"}, id="fe2e-d1"),
           stack.start("fe2e-silent", {"partner": "globex"}, id="fe2e-s1"),
           stack.start("fe2e-silent", {"partner": "initech"}, id="fe2e-s2", priority=1)]
    listed = {(r["limit"], r["key"]): r for r in stack.engine.limits()["limits"]}
    globex = listed[("task:flowe2e.partner", "globex")]
    assert (globex["held"], globex["waiting"]) == (1, 1), globex  # the silent one waits its turn
    assert listed[("task:flowe2e.partner", "initech")]["held"] == 1
    line = stack.describe("fe2e-s1")["steps"]["call"]["waiting"]
    assert "waiting for limit 'task:flowe2e.partner' key 'globex' (1 at once): place 1 of 1" in line, line
    finish(stack, ids)
    listed = {(r["limit"], r["key"]): r for r in stack.engine.limits()["limits"]}
    assert all(listed[("task:flowe2e.partner", k)]["held"] == 0 for k in ("globex", "initech"))
