"""Redrive and fork for code workflows (the same engine rules as definitions, through replay)."""

from __future__ import annotations

from typing import Any

import pytest
from code_harness import Harness
from orbit.core.history.events import TaskError
from orbit.errors import RedriveRefused
from orbit.workflow import CodeRegistry, workflow

REG = CodeRegistry()
BROKEN: set[str] = set()


@workflow("rc-kid", build="k1", registry=REG)
def kid(ctx: Any, input: Any) -> Any:
    return ctx.step("w.kid", input)


@workflow("rc-flow", build="f1", registry=REG)
def flow(ctx: Any, input: Any) -> Any:
    a = ctx.step("w.a", {"v": 1})
    squares = ctx.map("w.sq", list(range(20)), tolerated_failures=1)
    b = ctx.step("w.b", {"v": a["v"] + 1})
    k = ctx.child("rc-kid", {"v": b["v"]})
    return {"a": a, "squares": squares, "b": b, "kid": k}


def worker(name: str, broken_for: Any = None) -> Any:
    def fn(input: Any, attempt: int) -> Any:
        if name in BROKEN and (broken_for is None or broken_for(input)):
            raise TaskError("BUG", f"{name} is broken", retryable=False)
        return {"v": input["v"]} if isinstance(input, dict) else input * input
    return fn


def harness() -> Harness:
    BROKEN.clear()
    return Harness(flow, kid, workers={"w.a": worker("w.a"), "w.b": worker("w.b"), "w.kid": worker("w.kid"),
                                      "w.sq": worker("w.sq", lambda i: i in (17, 19))})


def runs(h: Harness, task: str) -> list[Any]:
    return [i for t, i in h.calls if t == task]


def test_code_redrive_of_a_failed_step() -> None:
    h = harness()
    BROKEN.add("w.b")
    h.start("rc-flow")
    h.run()
    assert h.describe()["status"] == "FAILED"
    BROKEN.clear()
    h.redrive("ex-1")
    h.run()
    d = h.describe()
    assert d["status"] == "COMPLETED", d
    assert d["output"]["b"] == {"v": 2} and d["output"]["kid"] == {"v": 2}
    assert len(runs(h, "w.a")) == 1 and len(runs(h, "w.sq")) == 20 and len(runs(h, "w.b")) == 2


def test_code_redrive_of_a_map_reruns_only_failed_elements() -> None:
    h = harness()
    BROKEN.add("w.sq")
    h.start("rc-flow")
    h.run()
    d = h.describe()
    assert d["status"] == "FAILED" and d["steps"]["2.w.sq[17]"]["status"] == "FAILED"
    BROKEN.clear()
    out = h.redrive("ex-1")
    assert sorted(out["steps"]) == ["2.w.sq", "2.w.sq[17]", "2.w.sq[19]"]
    h.run()
    d = h.describe()
    assert d["status"] == "COMPLETED", d
    assert d["output"]["squares"] == [i * i for i in range(20)]
    assert sorted(runs(h, "w.sq")) == sorted(list(range(20)) + [17, 19])


def test_code_redrive_of_a_parent_whose_child_failed() -> None:
    h = harness()
    BROKEN.add("w.kid")
    h.start("rc-flow")
    h.run()
    assert h.describe()["status"] == "FAILED"
    child = next(k for k in h.describe()["steps"] if "child" in k)
    kid_id = f"ex-1/{child}"
    assert h.describe(kid_id)["status"] == "FAILED"
    BROKEN.clear()
    h.redrive("ex-1")
    h.run()
    assert h.describe()["status"] == "COMPLETED" and h.describe(kid_id)["redrive_count"] == 1
    assert len(runs(h, "w.b")) == 1 and len(runs(h, "w.kid")) == 2


def test_code_fork_from_a_middle_step() -> None:
    h = harness()
    h.start("rc-flow")
    h.run()
    assert h.describe()["status"] == "COMPLETED"
    fork = h.fork("ex-1", "3.w.b", id="ex-1-f")
    h.run()
    f = h.describe(fork)
    assert f["status"] == "COMPLETED" and f["output"] == h.describe()["output"]
    assert f["forked_from"] == {"execution_id": "ex-1", "step": "3.w.b"}
    assert h.describe()["forked_to"] == ["ex-1-f"]
    assert len(runs(h, "w.a")) == 1 and len(runs(h, "w.sq")) == 20  # reused
    assert len(runs(h, "w.b")) == 2 and len(runs(h, "w.kid")) == 2  # ran again in the fork


@workflow("rc-chain", build="c1", registry=REG)
def chain(ctx: Any, n: Any) -> Any:
    if n < 1:
        ctx.continue_as_new(n + 1)
    return ctx.step("w.kid", {"v": n})


@workflow("rc-chain-parent", build="p1", registry=REG)
def chain_parent(ctx: Any, input: Any) -> Any:
    return ctx.child("rc-chain", 0)


def test_a_failed_child_that_continued_as_new_is_redriven_at_the_end_of_its_chain() -> None:
    BROKEN.clear()
    h = Harness(chain, chain_parent, workers={"w.kid": worker("w.kid")})
    BROKEN.add("w.kid")
    h.start("rc-chain-parent")
    h.run()
    kid = next(k for k in h.describe()["steps"] if "child" in k)
    first, last = f"ex-1/{kid}", f"ex-1/{kid}~1"
    assert h.describe()["status"] == "FAILED" and h.describe(last)["status"] == "FAILED"
    BROKEN.clear()
    h.redrive("ex-1")
    h.run()
    assert h.describe()["status"] == "COMPLETED" and h.describe()["output"] == {"v": 1}
    assert h.describe(last)["redrive_count"] == 1 and h.describe(first)["redrive_count"] == 0
    with pytest.raises(RedriveRefused, match="continued as new as 'ex-1/1.child\\(rc-chain\\)~1'"):
        h.redrive(first)
