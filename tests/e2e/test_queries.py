"""Queries end to end on the local stack, for definitions and code workflows: running and ended
executions, nothing recorded, unknown names listed, durable calls refused."""

from __future__ import annotations

import orbit
import pytest
from orbit.errors import ValidationError
from orbit.local import LocalStack

DEFN = {
    "orbit": 1, "name": "query-defn", "version": "1",
    "steps": {"first": {"compute": "{% input.n * 2 %}"},
              "wait": {"wait_for": "go", "after": ["first"]},
              "last": {"compute": "{% steps.wait.output.k %}"}},
    "queries": {"doubled": "{% steps.first.output %}",
                "stage": "{% steps.last.status ? 'done' : (steps.first.status ? 'waiting' : 'new') %}",
                "plus": "{% steps.first.output + query.add %}"},
}


@orbit.workflow("query-code", version="1")
def counted(ctx, input):
    seen = {"count": 0, "last": None}
    ctx.query_handler("count", lambda _: seen["count"])
    ctx.query_handler("plus", lambda q: seen["count"] + q["add"])
    ctx.query_handler("sneaky", lambda _: ctx.sleep("1s"))
    for _ in range(input["rounds"]):
        seen["last"] = ctx.wait_for("tick")
        seen["count"] += 1
    return seen


@pytest.fixture(scope="module")
def stack():
    with LocalStack(mode="inprocess") as st:
        st.register(DEFN)
        st.register(counted)
        yield st


def test_definition_queries_running_and_ended(stack):
    eid = stack.start("query-defn", {"n": 21})
    stack.run_until_idle()
    before = stack.history(eid)
    assert stack.query(eid, "doubled") == 42
    assert stack.query(eid, "stage") == "waiting"
    assert stack.query(eid, "plus", {"add": 8}) == 50
    assert stack.history(eid) == before  # a query writes nothing
    stack.signal(eid, "go", {"k": 1})
    assert stack.run_until_done(eid)["status"] == "COMPLETED"
    assert stack.query(eid, "stage") == "done"  # ended executions answer too
    with pytest.raises(ValidationError, match="has no query 'nope'; it declares: doubled, plus, stage"):
        stack.query(eid, "nope")


def test_code_queries_read_locals_after_replay(stack):
    eid = stack.start("query-code", {"rounds": 3})
    stack.run_until_idle()
    assert stack.query(eid, "count") == 0
    stack.signal(eid, "tick", 1)
    stack.run_until_idle()
    before = stack.history(eid)
    assert stack.query(eid, "count") == 1
    assert stack.query(eid, "plus", {"add": 10}) == 11
    assert stack.history(eid) == before
    with pytest.raises(ValidationError, match=r"called ctx\.sleep\(\)"):
        stack.query(eid, "sneaky")
    assert stack.history(eid) == before
    for _ in range(2):
        stack.signal(eid, "tick", 1)
        stack.run_until_idle()
    assert stack.describe(eid)["status"] == "COMPLETED"
    assert stack.query(eid, "count") == 3
    with pytest.raises(ValidationError, match="it declares: count, plus, sneaky"):
        stack.query(eid, "nope")


def test_invalid_query_declarations_are_refused(stack):
    bad = {**DEFN, "name": "query-bad", "queries": {"x": "not an expression", "y": "{% nope.z %}"}}
    with pytest.raises(ValidationError) as e:
        stack.register(bad)
    paths = {p.path for p in e.value.problems}
    assert {"queries.x", "queries.y"} <= paths
