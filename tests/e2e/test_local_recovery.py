"""Redrive and fork end to end on the local stack: the real handlers, moto in process.

What ran is counted per idempotency key in the workers themselves, so "ran once" means the
task function ran once, not that history says so.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orbit
import pytest
from orbit.errors import NotFound, RedriveRefused, ValidationError
from orbit.local import LocalStack

RUNS: Counter[str] = Counter()
BROKEN: set[str] = set()


def _task(name: str):
    def fn(inp: Any, ctx: Any) -> Any:
        RUNS[f"{name}:{ctx.idempotency_key}"] += 1
        v = inp.get("v") if isinstance(inp, dict) else inp
        if name in BROKEN or f"{name}:{v}" in BROKEN:
            raise orbit.TaskError("BUG", f"{name} is broken for {v!r}", retryable=False)
        return {"v": v}
    return fn


def ran(name: str) -> int:
    return sum(n for k, n in RUNS.items() if k.startswith(name + ":"))


CHAIN = {"orbit": 1, "name": "rec-chain", "steps": {
    "a": {"task": "rec.a", "input": {"v": "a"}},
    "b": {"task": "rec.b", "input": {"v": "{% steps.a.output.v & 'b' %}"}},
    "c": {"task": "rec.c", "input": {"v": "{% steps.b.output.v & 'c' %}"}}}}
FAN = {"orbit": 1, "name": "rec-fan", "steps": {
    "each": {"for": "{% input.items %}", "task": "rec.e", "input": {"v": "{% item %}"},
             "tolerated_failures": 2}}}
KID = {"orbit": 1, "name": "rec-kid", "steps": {"x": {"task": "rec.x", "input": {"v": "{% input.v %}"}}},
       "output": "{% steps.x.output %}"}
PARENT = {"orbit": 1, "name": "rec-parent", "steps": {
    "pre": {"task": "rec.pre", "input": {"v": "pre"}},
    "kid": {"workflow": "rec-kid", "input": {"v": "{% steps.pre.output.v %}"}},
    "post": {"task": "rec.post", "input": {"v": "{% steps.kid.output.v & '!' %}"}}}}


@orbit.workflow("rec-code")
def rec_code(ctx: Any, input: Any) -> Any:
    a = ctx.step("rec.a", {"v": "ca"})
    b = ctx.step("rec.b", {"v": a["v"] + "b"})
    return {"b": b, "c": ctx.step("rec.c", {"v": b["v"] + "c"})}


@pytest.fixture(scope="module")
def stack():
    from orbit.worker import task

    for name in ("a", "b", "c", "e", "x", "pre", "post"):
        task(f"rec.{name}")(_task(f"rec.{name}"))
    with LocalStack(mode="inprocess") as st:
        for d in (CHAIN, FAN, KID, PARENT, rec_code):
            st.register(d)
        yield st


@pytest.fixture(autouse=True)
def clean():
    RUNS.clear()
    BROKEN.clear()


def test_redrive_after_fixing_a_worker(stack: LocalStack) -> None:
    BROKEN.add("rec.b")
    eid = stack.start("rec-chain", {})
    assert stack.run_until_done(eid)["status"] == "FAILED"
    BROKEN.clear()
    out = stack.redrive(eid)
    assert out["redrive_count"] == 1 and out["steps"] == ["b"]
    d = stack.run_until_done(eid)
    assert d["status"] == "COMPLETED" and d["redrive_count"] == 1
    assert d["output"]["c"] == {"v": "abc"}
    assert (ran("rec.a"), ran("rec.b"), ran("rec.c")) == (1, 2, 1)  # earlier steps ran once
    types = [e["type"] for e in stack.history(eid)]
    assert types.count("ExecutionRedriven") == 1 and types[-1] == "WorkflowCompleted"
    assert any(e["execution_id"] == eid and e["status"] == "COMPLETED" for e in stack.list("rec-chain"))


def test_redrive_of_a_100_element_fan_out_reruns_only_the_3_failed(stack: LocalStack) -> None:
    BROKEN.update({"rec.e:97", "rec.e:98", "rec.e:99"})
    eid = stack.start("rec-fan", {"items": list(range(100))})
    first = stack.run_until_done(eid)
    assert first["status"] == "FAILED"
    succeeded = {k for k, s in first["steps"].items() if k.startswith("each[") and s["status"] == "SUCCEEDED"}
    assert len(succeeded) == 97
    before = Counter(RUNS)
    BROKEN.clear()
    stack.redrive(eid)
    d = stack.run_until_done(eid)
    assert d["status"] == "COMPLETED" and d["output"]["each"] == [{"v": i} for i in range(100)]
    again = RUNS - before
    assert sorted(k.rsplit("[", 1)[1] for k in again) == ["97]", "98]", "99]"]
    assert all(n == 1 for n in again.values())


def test_redrive_of_a_parent_whose_child_failed(stack: LocalStack) -> None:
    BROKEN.add("rec.x")
    eid = stack.start("rec-parent", {})
    assert stack.run_until_done(eid)["status"] == "FAILED"
    kid = f"{eid}/kid"
    assert stack.describe(kid)["status"] == "FAILED"
    BROKEN.clear()
    stack.redrive(eid)
    d = stack.run_until_done(eid)
    assert d["status"] == "COMPLETED" and d["output"]["post"] == {"v": "pre!"}
    k = stack.describe(kid)
    assert k["status"] == "COMPLETED" and k["redrive_count"] == 1
    assert (ran("rec.pre"), ran("rec.x"), ran("rec.post")) == (1, 2, 1)


def test_code_workflow_redrive_and_fork_from_a_middle_step(stack: LocalStack) -> None:
    BROKEN.add("rec.c")
    eid = stack.start("rec-code", {})
    assert stack.run_until_done(eid)["status"] == "FAILED"
    BROKEN.clear()
    stack.redrive(eid)
    d = stack.run_until_done(eid)
    assert d["status"] == "COMPLETED" and d["output"]["c"] == {"v": "cabc"}
    assert (ran("rec.a"), ran("rec.b"), ran("rec.c")) == (1, 1, 2)
    fork = stack.fork(eid, from_step="2.rec.b", id=f"{eid}-again")
    f = stack.run_until_done(fork)
    assert fork == f"{eid}-again" and f["status"] == "COMPLETED" and f["output"] == d["output"]
    assert f["forked_from"] == {"execution_id": eid, "step": "2.rec.b"}
    assert (ran("rec.a"), ran("rec.b"), ran("rec.c")) == (1, 2, 3)
    stack.run_until_idle()
    assert stack.describe(eid)["forked_to"] == [fork]


def test_definition_fork_from_a_middle_step(stack: LocalStack) -> None:
    eid = stack.start("rec-chain", {})
    assert stack.run_until_done(eid)["status"] == "COMPLETED"
    fork = stack.fork(eid, from_step="b")
    f = stack.run_until_done(fork)
    assert f["status"] == "COMPLETED" and f["output"]["c"] == {"v": "abc"}
    assert (ran("rec.a"), ran("rec.b"), ran("rec.c")) == (1, 2, 2)
    stack.run_until_idle()
    assert stack.describe(eid)["forked_to"] == [fork]


def test_bad_requests_write_nothing(stack: LocalStack) -> None:
    with pytest.raises(NotFound):
        stack.redrive("no-such-execution")
    BROKEN.add("rec.b")
    eid = stack.start("rec-chain", {})
    stack.run_until_idle()
    assert stack.describe(eid)["status"] == "FAILED"
    done = stack.start("rec-chain", {}, id=f"{eid}-ok")
    BROKEN.clear()
    stack.run_until_done(done)
    running = stack.start("rec-chain", {}, id=f"{eid}-running")  # its first step is queued, not run yet
    for target, match in ((done, "is COMPLETED"), (running, "is RUNNING")):
        before = stack.history(target)
        with pytest.raises(RedriveRefused, match=match):
            stack.redrive(target)
        assert stack.history(target) == before
    before = stack.history(eid)
    with pytest.raises(ValidationError, match="has no step 'nope'"):
        stack.fork(eid, from_step="nope", id="never")
    with pytest.raises(NotFound):
        stack.describe("never")
    assert stack.history(eid) == before
    stack.run_until_done(running)
