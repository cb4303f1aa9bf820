"""Search attributes in the core and the engine (in memory): code, definitions, bounds, listing."""

from __future__ import annotations

from typing import Any

import pytest
from code_harness import Harness
from orbit.core.definition import validate_definition
from orbit.core.history.attributes import MAX_ATTRIBUTES, attributes_problem, changed, parse_where
from orbit.service.replay_host import default_runtime
from orbit.testing.simulator import Simulator
from orbit.workflow import CodeRegistry, workflow

REG = CodeRegistry()


def echo(input: Any, attempt: int) -> Any:
    return {"echo": input}


def test_code_sets_attributes_once_however_often_it_replays() -> None:
    @workflow("attr-code", registry=REG)
    def wf(ctx: Any, input: Any) -> Any:
        ctx.set_attributes({"customer": input["customer"], "stage": "reserving"})
        ctx.step("inventory.reserve", {})
        ctx.set_attributes({"stage": "shipping", "total": 12.0})
        ctx.step("inventory.reserve", {}, name="again")
        ctx.set_attributes({"stage": "done"})
        return "ok"

    h = Harness(wf, workers={"inventory.reserve": echo})
    h.held = {"inventory.reserve"}
    h.start("attr-code", {"customer": "acme"})
    default_runtime().forget()  # the next decision replays the function from its start (cold)
    h.engine._cache.clear()
    h.release("inventory.reserve")
    h.run()
    assert h.describe()["status"] == "COMPLETED"
    assert h.describe()["attributes"] == {"customer": "acme", "stage": "done", "total": 12}
    sets = [e["values"] for e in h.history() if e["type"] == "AttributesSet"]
    assert sets == [{"customer": "acme", "stage": "reserving"}, {"stage": "shipping", "total": 12},
                    {"stage": "done"}]


def test_a_bad_attribute_raises_in_the_code_naming_it() -> None:
    @workflow("attr-bad", registry=REG)
    def wf(ctx: Any, input: Any) -> Any:
        try:
            ctx.set_attributes({"items": [1, 2]})
        except ValueError as e:
            return str(e)
        return "accepted"

    h = Harness(wf, workers={})
    h.start("attr-bad", {})
    assert h.describe()["output"] == ("set_attributes: attribute 'items': must be a string, a number or "
                                      "a boolean, not a list")


DEF = {"orbit": 1, "name": "attr-def", "version": "1",
       "attributes": {"customer": "{% input.customer %}", "tier": "gold",
                      "charged": "{% steps.charge.output.amount %}"},
       "steps": {"charge": {"task": "pay.charge", "input": {}}}}


def test_a_definition_sets_attributes_from_its_expressions_as_they_become_known() -> None:
    sim = Simulator()
    sim.register(DEF)
    sim.worker("pay.charge", lambda input, ctx: {"amount": 42})
    eid = sim.start("attr-def", {"customer": "acme"}, id="d-1")
    sim.run()
    assert sim.describe(eid)["status"] == "COMPLETED"
    assert sim.describe(eid)["attributes"] == {"customer": "acme", "tier": "gold", "charged": 42}
    sets = [e["values"] for e in sim.history(eid) if e["type"] == "AttributesSet"]
    assert sets == [{"customer": "acme", "tier": "gold"}, {"charged": 42}]
    entries, _ = sim.engine.list(where={"charged": 42})
    assert [e.execution_id for e in entries] == ["d-1"]
    assert entries[0].attributes == {"customer": "acme", "tier": "gold", "charged": 42}
    assert sim.engine.list(where={"tier": "silver"})[0] == []


def test_an_attribute_that_reads_a_step_waits_until_the_step_ended() -> None:
    sim = Simulator()
    size = "{% $length(steps.charge.output.id) %}"  # an error while `charge` has no output yet
    sim.register({**DEF, "name": "attr-wait", "attributes": {"size": size}})
    sim.worker("pay.charge", lambda input, ctx: {"id": "abcd"})
    eid = sim.start("attr-wait", {})
    sim.run()
    desc = sim.describe(eid)
    assert desc["status"] == "COMPLETED" and desc["attributes"] == {"size": 4}


def test_a_definition_attribute_of_the_wrong_type_fails_the_execution_clearly() -> None:
    sim = Simulator()
    sim.register({**DEF, "name": "attr-def-bad", "attributes": {"customer": "{% input %}"}})
    sim.worker("pay.charge", lambda input, ctx: {"amount": 1})
    eid = sim.start("attr-def-bad", {"customer": "acme"})
    sim.run()
    desc = sim.describe(eid)
    assert desc["status"] == "FAILED"
    assert desc["error"]["code"] == "ATTRIBUTE_INVALID"
    assert desc["error"]["message"] == ("attributes.customer: must be a string, a number or a boolean, "
                                        "not an object")


@pytest.mark.parametrize(("block", "problem"), [
    ({"9lives": "x"}, "attributes.9lives: attribute name '9lives' must be 1-40 letters"),
    ([1], "attributes: must be a non-empty mapping"),
    ({"a": [1]}, "attributes.a: must be an expression"),
    ({"a": "{% steps.nope.output %}"}, "attributes.a: reads unknown step 'nope'"),
    ({f"k{i}": 1 for i in range(MAX_ATTRIBUTES + 1)}, f"attributes: at most {MAX_ATTRIBUTES} attributes"),
])
def test_the_attributes_block_is_validated(block: Any, problem: str) -> None:
    found = [f"{p.path}: {p.message}" for p in validate_definition({**DEF, "attributes": block})]
    assert any(f.startswith(problem) for f in found), found


def test_bounds_and_where_parsing() -> None:
    too_long = attributes_problem({"a": "x" * 257}, {})
    assert too_long == "attribute 'a': a string of 257 characters; at most 256"
    full = {f"k{i}": 1 for i in range(MAX_ATTRIBUTES)}
    assert attributes_problem({"k0": 2}, full) is None  # replacing a value is not a new attribute
    assert "at most 10 attributes per execution" in str(attributes_problem({"extra": 1}, full))
    assert attributes_problem({"n": float("nan")}, {}) == "attribute 'n': nan is not a finite number"
    assert changed({"a": 1, "b": True, "c": 2.0}, {"a": True, "b": True, "c": 2}) == {"a": 1}
    assert parse_where("tier=gold") == ("tier", "gold")
    assert parse_where('code="42"') == ("code", "42")
    assert parse_where("n=42") == ("n", 42)
    assert parse_where("vip=true") == ("vip", True)
    assert parse_where("note=a=b") == ("note", "a=b")
    for bad, message in [("tier", "must look like name=value"), ("9x=1", "attribute name '9x'"),
                         ("n=" + "y" * 300, "n: a string of 300 characters")]:
        with pytest.raises(ValueError, match=message):
            parse_where(bad)
