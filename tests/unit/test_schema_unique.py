"""`uniqueItems` in every schema Orbit evaluates gives jsonschema's answer in linear time.

jsonschema compares every pair of items when they cannot be sorted (objects): 50,000 objects
would hold the decider or the API for ever. The scenario with 50,000 objects runs in a child
process with a generous timeout, so a regression fails instead of hanging; what is asserted is
the answer, never a time. The answers themselves are compared with jsonschema's own
(`jsonschema._utils.uniq`, the function its `uniqueItems` calls) on generated arrays."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator, Draft202012Validator
from jsonschema._utils import equal
from jsonschema._utils import uniq as jsonschema_uniq
from orbit.core.definition.contracts import check_schema
from orbit.core.definition.schema_regex import re2_class
from orbit.core.definition.schema_unique import is_unique

from tests.unit.child_run import run_in_child

TIMEOUT_S = 20  # generous: the answer takes well under a second; the pairwise one never comes

# Few distinct leaves, so generated arrays often hold equal items, and bools beside 0/1.
LEAVES = st.sampled_from([0, 1, 2, 0.0, 1.0, -0.0, 1.5, 2**53 + 1, float(2**53), True, False, None,
                          "", "a", "1", "true"])
JSON = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3), max_leaves=8)


def _pairwise(items: list[Any]) -> bool:
    """The meaning of uniqueItems: no two items equal under jsonschema's `equal`."""
    return not any(equal(items[i], items[j]) for i in range(len(items)) for j in range(i))


@settings(max_examples=600, deadline=None)
@given(st.lists(JSON, max_size=8))
def test_is_unique_gives_jsonschemas_answer(items: list[Any]) -> None:
    assert is_unique(items) == jsonschema_uniq(items)


@settings(max_examples=600, deadline=None)
@given(st.lists(JSON, max_size=8), st.lists(JSON, max_size=3))
def test_the_hashed_path_is_exactly_jsonschemas_equality(items: list[Any], dupes: list[Any]) -> None:
    # A mapping among the items makes them unsortable: jsonschema compares every pair, we hash.
    items = [{"x": 1}, *items, *dupes[:1]] if dupes else [{"x": 1}, *items]
    assert is_unique(items) == jsonschema_uniq(items) == _pairwise(items)


@settings(max_examples=300, deadline=None)
@given(st.lists(JSON, max_size=8))
def test_the_validators_report_the_same_error(items: list[Any]) -> None:
    for cls in (Draft202012Validator, Draft7Validator):
        schema = {"uniqueItems": True}
        ours = [e.message for e in re2_class(cls)(schema).iter_errors(items)]
        theirs = [e.message for e in cls(schema).iter_errors(items)]
        assert ours == theirs
        assert not list(re2_class(cls)({"uniqueItems": False}).iter_errors(items))


@settings(max_examples=600, deadline=None)
@given(JSON, st.lists(JSON, max_size=5))
def test_enum_gives_jsonschemas_answer_and_message(value: Any, members: list[Any]) -> None:
    schema = {"enum": members}
    ours = [e.message for e in re2_class(Draft202012Validator)(schema).iter_errors(value)]
    theirs = [e.message for e in Draft202012Validator(schema).iter_errors(value)]
    assert len(ours) == len(theirs)
    if len(repr(members)) <= 200:
        assert ours == theirs
    else:
        assert ours == [m[:len(f"{value!r} is not one of ") + 197] + "..." for m in theirs]


@pytest.mark.parametrize(("items", "unique"), [
    ([1, True], True), ([0, False], True), ([True, True], False), ([False, False], False),
    ([1, 1.0], False), ([0, -0.0], False), ([2**53 + 1, float(2**53)], True),
    ([[1], [True]], True), ([[0], [False], {}], True), ([[1], [1.0], {}], False),
    ([{"a": 1}, {"a": True}], True), ([{"a": 1}, {"a": 1.0}], False),
    ([{"a": 1, "b": [2, {"c": None}]}, {"b": [2.0, {"c": None}], "a": 1}], False),
    ([{"a": [True]}, {"a": [1]}], True), ([{"a": None}, {"a": False}], True),
    ([{}, []], True), ([{}, {}], False), ([[], []], False), ([None, None, {}], False),
    ([{"a": "1"}, {"a": 1}], True), ([[{"a": 1}], [{"a": 1}]], False), (["1", 1, {}], True),
    ([(1, 2), [1, 2], {}], False),
    # jsonschema sorts lists of lists with Python's order (where True == 1) and compares neighbours
    # only: the two [1]s are never neighbours, so it accepts this array. Its answer is kept.
    ([[1], [True], [1]], True),
])
def test_edge_cases_agree_with_jsonschema(items: list[Any], unique: bool) -> None:
    assert jsonschema_uniq(items) == unique
    assert is_unique(items) == unique


def test_a_value_that_is_not_json_data_falls_back_to_jsonschemas_comparison() -> None:
    for items in ([b"ab", [97, 98]], [b"ab", {}, b"ab"], [{1, 2}, {}], [{"a": b"x"}, {"a": b"y"}]):
        assert is_unique(items) == jsonschema_uniq(items)


def test_the_error_names_the_path_like_every_contract_error() -> None:
    schema = {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True}}}
    error = check_schema(schema, {"tags": [{"k": 1}, {"k": 1.0}]}, "INPUT_CONTRACT_VIOLATION")
    assert error is not None
    assert error.message == 'input.tags: [{"k": 1}, {"k": 1.0}] has non-unique elements'
    assert error.details["errors"][0]["keyword"] == "uniqueItems"
    assert check_schema(schema, {"tags": [{"k": 1}, {"k": True}]}, "INPUT_CONTRACT_VIOLATION") is None


def _in_child(body: str) -> Any:
    return run_in_child(body, TIMEOUT_S, "uniqueItems compared every pair of items?")


def test_50000_objects_and_one_duplicate_are_answered_at_the_start() -> None:
    status, body, described, distinct = _in_child("""
        from orbit.core.definition.contracts import check_schema
        SCHEMA = {"type": "object", "properties": {"rows": {"type": "array", "uniqueItems": True}}}
        rows = [{"i": i} for i in range(50_000)]
        sim = Simulator(start_ms=0)
        sim.register(definition({"a": {"compute": "{% 1 %}"}}, input=SCHEMA))
        status, body = handle_request(sim.engine, "POST", "/executions",
                                      {"workflow": "wf", "id": "e1", "input": {"rows": rows + [{"i": 7.0}]}})
        sim.run()
        distinct = check_schema(SCHEMA, {"rows": rows}, "INPUT_CONTRACT_VIOLATION")
        emit([status, body, sim.describe("e1"), distinct is None])
    """)
    assert status == 201, body
    assert described["status"] == "FAILED"
    assert described["error"]["code"] == "INPUT_CONTRACT_VIOLATION"
    assert described["error"]["message"].startswith('input.rows: [{"i": 0}, {"i": 1}, ')
    assert described["error"]["message"].endswith("... has non-unique elements")
    assert distinct is True


def test_a_large_enum_against_many_items_is_answered_with_a_bounded_message() -> None:
    error = _in_child("""
        from orbit.core.definition.contracts import check_schema
        members = [{"k": "y" * 20, "n": i} for i in range(2_000)]
        SCHEMA = {"type": "array", "items": {"enum": members}}
        value = list(range(20_000)) + [{"n": 5.0, "k": "y" * 20}]  # the last one is a member
        error = check_schema(SCHEMA, value, "OUTPUT_CONTRACT_VIOLATION")
        emit([error.message, error.details["count"]])
    """)
    message, count = error
    assert count == 20_000
    assert message.startswith("output[")
    assert " is not one of [{'k': 'yyyyyyyyyyyyyyyyyyyy', 'n': 0}, " in message
    assert message.endswith("... (and 19999 more)") and len(message) < 300
