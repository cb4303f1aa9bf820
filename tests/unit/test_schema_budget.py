"""A schema check evaluates a number of keywords linear in the size of the value (schema_budget).

`{"allOf": [{"items": {"$ref": "#"}}, {"items": {"$ref": "#"}}]}` evaluates a list nested n deep
2^n times: 64 levels (the deepest a payload may be) would never be answered. The scenarios that
meet such a schema run in a child process with a generous timeout, so a regression fails instead
of hanging; what is asserted is the answer, never a time."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.core.definition import schema_budget
from orbit.core.definition.contracts import check_schema, compile_schema
from orbit.core.definition.schema_budget import BASE_STEPS, STEPS_PER_VALUE, SchemaBudgetExceeded, steps_for

from tests.unit.child_run import run_in_child

TIMEOUT_S = 40  # generous: the refusal takes a few seconds; the unbudgeted check never ends
TWICE = {"$defs": {"t": {"allOf": [{"items": {"$ref": "#/$defs/t"}}, {"items": {"$ref": "#/$defs/t"}}]}},
         "$ref": "#/$defs/t"}


def _nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def test_the_budget_counts_every_value() -> None:
    assert steps_for(0) == BASE_STEPS + STEPS_PER_VALUE
    assert steps_for({"a": [1, "x", None], "b": {}}) == BASE_STEPS + 6 * STEPS_PER_VALUE
    cycle: list[Any] = [1]
    cycle.append(cycle)  # only Python code can pass one: counted, not walked for ever
    assert steps_for(cycle) == BASE_STEPS + 3 * STEPS_PER_VALUE


def test_a_recursive_schema_on_a_shallow_value_is_checked_as_before() -> None:
    assert check_schema(TWICE, _nested(8), "INPUT_CONTRACT_VIOLATION") is None
    error = check_schema({**TWICE, "$defs": {"t": {**TWICE["$defs"]["t"], "type": "array"}}},
                         [[[0]]], "INPUT_CONTRACT_VIOLATION")
    assert error is not None and error.message.startswith("input[0][0][0]: 0 is not of type 'array'")


def test_keywords_past_the_budget_stop_the_check_and_only_inside_it() -> None:
    validator = compile_schema({"type": "array", "items": {"type": "integer"}})
    with pytest.raises(SchemaBudgetExceeded, match="more than 5 steps"):
        list(schema_budget.budgeted(validator, 5).iter_errors(list(range(10))))
    assert list(schema_budget.budgeted(validator, 12).iter_errors(list(range(10)))) == []
    assert list(validator.iter_errors(list(range(10_000)))) == []  # outside a budget: uncounted


def _in_child(body: str) -> Any:
    setup = f"""
        TWICE = {TWICE!r}
        def nested(depth):
            value = 0
            for _ in range(depth):
                value = [value]
            return value
    """
    return run_in_child(body, TIMEOUT_S, "a schema check ran without its budget?", setup)


def test_a_self_referring_schema_on_a_deep_input_fails_the_start_instead_of_hanging() -> None:
    status, body, described = _in_child("""
        sim = Simulator(start_ms=0)
        sim.register(definition({"a": {"compute": "{% 1 %}"}}, input={"type": "object",
                                "properties": {"tree": {"$ref": "#/$defs/t"}}, "$defs": TWICE["$defs"]}))
        status, body = handle_request(sim.engine, "POST", "/executions",
                                      {"workflow": "wf", "id": "e1", "input": {"tree": nested(60)}})
        sim.run()
        emit([status, body, sim.describe("e1")])
    """)
    assert status == 201, body
    assert described["status"] == "FAILED"
    assert described["error"]["code"] == "INPUT_CONTRACT_VIOLATION"
    assert described["error"]["message"].startswith("input: checking the value against the schema took more "
                                                    "than 203,100 steps (keyword evaluations)")


def test_a_signal_payload_against_a_self_referring_schema_is_refused() -> None:
    status, body = _in_child("""
        sim = Simulator(start_ms=0)
        sim.register(definition({"w": {"wait_for": "go"}}, signals={"go": {"schema": TWICE}}))
        sim.start("wf", {}, id="e1")
        sim.run_until_idle()
        emit(handle_request(sim.engine, "POST", "/executions/e1/signals/go", {"payload": nested(60)}))
    """)
    assert status == 400 and body["error"]["code"] == "PAYLOAD_REFUSED", body
    assert "took more than 203,050 steps" in body["error"]["message"]
