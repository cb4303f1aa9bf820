"""JSONata templates: leaf-by-leaf evaluation, deterministic clock, missing paths, errors, references."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from orbit.core.definition.expressions import (
    evaluate,
    expressions_in,
    is_expression,
    parse_expression,
    reads_steps_dynamically,
    references,
)
from orbit.errors import ExpressionError, OrbitError

ROOT = {
    "input": {"total": 3, "order_id": "o-1", "items": [{"sku": "a", "cost": 1.5}, {"sku": "b", "cost": 2}]},
    "steps": {"ship": {"status": "SUCCEEDED", "output": [{"cost": 1}, {"cost": 2}], "error": None}},
    "execution": {"id": "e-1", "started_at": "2026-01-01T00:00:00.000Z"},
    "hooks": {"approval": {"token": "tok"}},
}
DAY = 86_400_000


def test_template_is_evaluated_leaf_by_leaf_and_keys_are_literal() -> None:
    template = {"{% input.total %}": "{% input.total %}", "list": ["{% input.order_id %}", 7, True, None],
                "nested": {"sku": "{% input.items[1].sku %}"}, "plain": "hello"}
    assert evaluate(template, ROOT, 0) == {"{% input.total %}": 3, "list": ["o-1", 7, True, None],
                                           "nested": {"sku": "b"}, "plain": "hello"}


def test_only_whole_strings_are_expressions() -> None:
    assert evaluate("order {% input.order_id %}", ROOT, 0) == "order {% input.order_id %}"
    assert evaluate("{%input.total%}", ROOT, 0) == 3
    assert is_expression("{% x %}") and not is_expression(" {% x %}") and not is_expression("{%}")


def test_missing_paths_read_as_null() -> None:
    assert evaluate("{% steps.nope.output.x %}", ROOT, 0) is None
    assert evaluate({"a": "{% input.missing %}"}, ROOT, 0) == {"a": None}
    assert evaluate("{% undefined_root %}", {}, 0) is None


def test_numbers_stay_integers_when_integral() -> None:
    assert evaluate("{% $sum(steps.ship.output.cost) %}", ROOT, 0) == 3
    assert type(evaluate("{% $sum(steps.ship.output.cost) %}", ROOT, 0)) is int
    assert type(evaluate("{% 1.5 * 2 %}", ROOT, 0)) is int
    assert evaluate("{% $sum(input.items.cost) %}", ROOT, 0) == 3.5
    assert evaluate("{% input.total / 2 %}", ROOT, 0) == 1.5


def test_results_are_plain_json() -> None:
    value = evaluate("{% input.items.sku %}", ROOT, 0)
    assert value == ["a", "b"] and type(value) is list
    assert type(evaluate("{% [1, 2] %}", ROOT, 0)) is list


def test_now_and_millis_are_the_decision_time_not_the_wall_clock() -> None:
    assert evaluate("{% $now() %}", ROOT, DAY) == "1970-01-02T00:00:00.000Z"
    assert evaluate("{% $millis() %}", ROOT, DAY + 5) == DAY + 5
    assert evaluate("{% $now('[Y0001]-[M01]') %}", ROOT, 0) == "1970-01"
    # The same compiled expression, other times: no value leaks between calls.
    assert evaluate("{% $now() %}", ROOT, 1_767_225_600_000) == "2026-01-01T00:00:00.000Z"
    assert evaluate("{% $millis() + 1 %}", ROOT, 41) == 42


def test_item_and_index_inside_a_for_step() -> None:
    root = {**ROOT, "item": {"sku": "z"}, "index": 4}
    assert evaluate({"sku": "{% item.sku %}", "line": "{% index %}"}, root, 0) == {"sku": "z", "line": 4}


def test_hooks_and_execution_are_readable() -> None:
    assert evaluate("{% hooks.approval.token & '/' & execution.id %}", ROOT, 0) == "tok/e-1"


def test_higher_order_functions_work_across_cached_expressions() -> None:
    parse_expression("input.total")  # compile another expression in between
    assert evaluate("{% $map(input.items, function($v){ $v.sku }) %}", ROOT, 0) == ["a", "b"]
    assert evaluate("{% $filter(input.items, function($v){ $v.cost > 1.5 }).sku %}", ROOT, 0) == "b"


@pytest.mark.parametrize("template, text", [
    ({"amount": "{% 1/0 %}"}, "amount: division by zero in '{% 1/0 %}'"),
    ("{% $number('x') %}", "$number: cannot convert 'x' to a number in \"{% $number('x') %}\""),
    ({"r": "{% 5 % 0 %}"}, "r: modulo by zero in '{% 5 % 0 %}'"),
    ({"d": "{% $map([1, 0], function($v){ 1/$v }) %}"}, "d: division by zero in"),  # the lambda, not $map
    ({"n": "{% $map(['1', 'x'], $number) %}"}, "n: $number: cannot convert 'x' to a number"),
    ("{% $power(0, -1) %}", "$power: 0 cannot be raised to a negative power in '{% $power(0, -1) %}'"),
    ("{% $undefinedfn() %}", "T1006"),
    ("{% input.total > %}", "S0207"),
    ("{% function($x){$x} %}", "not a JSON value"),
    ("{% 1e300 * 1e300 %}", "D1001"),
    ({"a": ["{% %}"]}, "a[0]: empty expression"),
])
def test_failures_raise_expression_error_with_where_and_why(template: object, text: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        evaluate(template, ROOT, 0)
    assert text in str(caught.value)
    assert isinstance(caught.value, OrbitError)
    assert "Error:" not in str(caught.value)  # no Python exception names (ZeroDivisionError: ...)


def test_parse_expression_accepts_both_forms_and_reports_position() -> None:
    assert parse_expression("{% a.b %}") is parse_expression("a.b")  # cached
    with pytest.raises(ExpressionError, match="at position"):
        parse_expression("a.(")
    with pytest.raises(ExpressionError):
        parse_expression(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("text, names", [
    ("steps.ship.output", {"ship"}),
    ("$sum(steps.ship.output.cost)", {"ship"}),
    ("steps.`my-step`.output", {"my-step"}),
    ("steps.'quoted'.output", {"quoted"}),
    ("$$.steps.a.output", {"a"}),
    ("$.steps.b", {"b"}),
    ("input.items[sku = steps.c.output.sku]", {"c"}),
    ("steps.d.status = 'FAILED' ? steps.e.error : input", {"d", "e"}),
    ("$map(input, function($v){ steps.f.output })", {"f"}),
    ("{'x': steps.g.output[0]}", {"g"}),
    ("input.steps.h", set()),  # a field named steps inside input is not a step
    ("hooks.approval.token", set()),
    ("steps. )", set()),  # does not parse: validation reports it, references ignore it
])
def test_references(text: str, names: set[str]) -> None:
    assert references("{% " + text + " %}") == names
    assert references({"deep": ["{% " + text + " %}"]}) == names


@pytest.mark.parametrize("text, dynamic", [
    ("steps", True), ("$keys(steps)", True), ("steps.*", True), ('$lookup(steps, "a")', True),
    ('steps["a"].output', True), ("($s := steps; $s.a)", True), ("steps.a", False), ("input.x", False),
])
def test_dynamic_reads_of_steps_are_detected(text: str, dynamic: bool) -> None:
    assert reads_steps_dynamically("{% " + text + " %}") is dynamic


def test_expressions_in_yields_paths() -> None:
    template = {"a": "{% x %}", "b": [1, "{% y %}"], "c": "literal"}
    assert list(expressions_in(template, "steps.s.input")) == [
        ("steps.s.input.a", "x"), ("steps.s.input.b[1]", "y")]


def test_threads_evaluate_the_same_expression_independently() -> None:
    from concurrent.futures import ThreadPoolExecutor

    template = "{% $map(input.items, function($v){ $v.n * 2 }) %}"

    def run(n: int) -> list[int]:
        root = {"input": {"items": [{"n": n}, {"n": n + 1}]}}
        return [evaluate(template, root, n)[0] for _ in range(50)]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, range(8)))
    assert results == [[2 * n] * 50 for n in range(8)]


@pytest.mark.parametrize("text", [
    "$sort(input.a)", "$append(input.a, [9])", "$reverse(input.a)", "input ~> |items|{'z': 1}|",
    "input.items^(k)", "input.items", "$merge([input.o, {'y': 2}])", "$map(input.items, function($v){$v})",
])
def test_evaluation_never_mutates_or_aliases_the_root(text: str) -> None:
    import copy

    root = {"input": {"a": [3, 1, 2], "o": {"x": 1}, "items": [{"k": 2}, {"k": 1}]}}
    before = copy.deepcopy(root)
    result = evaluate("{% " + text + " %}", root, 0)
    assert root == before
    if isinstance(result, list):
        result.append("junk")
        for element in result:
            if isinstance(element, dict):
                element["junk"] = 1
    elif isinstance(result, dict):
        result["junk"] = 1
    assert root == before

_JSONATA_ALPHABET = st.sampled_from(list("abcsteps.$()[]{}:;,'\"`*/%&|<>=!?~^#@ 0123456789-+\\")
                                    + ["steps.", "input.", "$now()", "function($x){", "..", ":=", "~>"])


@settings(max_examples=200, deadline=None)
@given(st.lists(_JSONATA_ALPHABET, max_size=25).map("".join))
def test_any_text_parses_evaluates_or_raises_expression_error(text: str) -> None:
    try:
        parse_expression(text)
        evaluate("{% " + text + " %}", ROOT, 0)
    except ExpressionError:
        pass
    references("{% " + text + " %}")  # never raises


@pytest.mark.parametrize("text, names", [
    ("input.x", {"input"}), ("inputs.x", {"inputs"}), ("$$.item", {"item"}), ("$.dd", {"dd"}),
    ("input.items[sku = item.sku]", {"input"}),  # inside a filter: the element's fields
    ("a ? b : c", {"a", "b", "c"}), ("$f(s) & -r", {"s", "r"}), ("function($v){ t }", {"t"}),
    ("{'k': u}", {"u"}), ("v{'k': w}", {"v"}), ("x^(y)", {"x"}), ("input ~> |z|{'a': aa}|", {"input"}),
    ("input.(ee)", {"input"}), ("$v.ff", set()), ("**.hh", set()), ("$now()", set()), ("( %", set()),
])
def test_root_names(text: str, names: set[str]) -> None:
    from orbit.core.definition.expressions import root_names

    assert root_names(text) == names


def test_random_and_shuffle_replay_to_the_same_values() -> None:
    # jsonata's $random/$shuffle read Python's random source: a decision would not be a
    # pure function of its arguments. Here they are drawn from the decision time and the root.
    root = {"input": {"xs": list(range(20))}, "execution": {"id": "e1"}}
    expr = {"r": "{% $random() %}", "r2": "{% [$random(), $random()] %}", "s": "{% $shuffle(input.xs) %}"}
    first = evaluate(expr, root, 1_000)
    assert first == evaluate(expr, root, 1_000)
    assert 0 <= first["r"] < 1 and first["r2"][0] != first["r2"][1] and first["r"] != first["r2"][0]
    assert sorted(first["s"]) == list(range(20)) and first["s"] != list(range(20))
    assert evaluate(expr, root, 2_000) != first
    assert evaluate(expr, {**root, "execution": {"id": "e2"}}, 1_000) != first
