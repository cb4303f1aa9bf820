"""Every expression runs on a budget (docs/limits.md): runaway ones fail with EXPRESSION_ERROR
naming the budget, quickly, and never hold the service.

Each class of runaway has several variants. Through the simulator each test also checks that
nothing accepted is lost (the execution ends FAILED with the error recorded, no message is
dead-lettered) and, with the hostile start running in another thread, that the engine still
answers another caller within 1 s of CPU time (tests/unit/meanwhile.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from cpu_time import cpu_timer
from dsl_harness import sim_with
from meanwhile import answered_meanwhile
from orbit.core.definition import expression_budget as budget
from orbit.core.definition import parse_definition
from orbit.core.definition.expressions import evaluate
from orbit.errors import ExpressionError, ValidationError

ROOT: dict[str, Any] = {"input": {}}

# (expression, input, the budget its error must name)
RUNAWAYS = {
    "tail recursion": ("($f := function($n){ $n > 100000000 ? $n : $f($n + 1) }; $f(0))", {}, "steps"),
    "$eval of a recursive function from the input": (
        "$eval(input.code)", {"code": "($f := function($n){ $f($n + 1) }; $f(0))"}, "steps"),
    "$eval of a loop from the input": (
        "$eval(input.code)", {"code": "$map([1..1000000], function($v){ $v * 2 })"}, "steps"),
    "map over a million": ("$map([1..1000000], function($v){ $v + 1 })", {}, "steps"),
    "non-tail recursion": ("($f := function($n){ 1 + $f($n + 1) }; $f(0))", {}, "depth"),
    "deep nesting": ("(" * 400 + "1" + ")" * 400, {}, "depth"),
    "range over the 1e6 limit": ("$count([1..10000 * 1000])", {}, "array size"),
    "range built from the input": ("$count([1..input.n])", {"n": 50_000_000}, "array size"),
    "append past the limit": ("$count($append([1..1000000], [1..1000000]))", {}, "total array size"),
    "$distinct of a large array": ("$count($distinct([1..1000000]))", {}, "array size"),
    "$pad to a gigabyte": ("$pad('x', 1000000000)", {}, "string size"),
    "doubling a string": ("$reduce([1..40], function($a, $b){ $a & $a }, 'xy')", {}, "string size"),
    "$replace blow-up": ("$replace(input.s, 'a', input.s)", {"s": "a" * 100_000}, "string size"),
    "a thousand 1 MB strings": ("$join($map([1..1000], function($v){ $pad('x', 999999) }))", {},
                                "total string size"),
    "$join past the limit": ("$join($map([1..30], function($v){ $pad('x', 99999) }))", {}, "string size"),
    "regex on a huge input": ("$contains(input.s, /b/)", {"s": "a" * 200_000},
                              "regular expression input size"),
}


@pytest.mark.parametrize("name", sorted(RUNAWAYS))
def test_runaway_expressions_fail_quickly_naming_the_budget(name: str) -> None:
    expr, inp, which = RUNAWAYS[name]
    with cpu_timer() as cpu, pytest.raises(ExpressionError) as exc:
        evaluate("{% " + expr + " %}", {"input": inp}, 0)
    assert f"expression budget exceeded: {which}" in str(exc.value)
    # CPU time, not wall time (tests/unit/cpu_time.py): at most 0.2 s measured, on a busy machine too
    assert cpu.seconds < 3, f"{name} took {cpu.seconds:.2f} s of CPU time"


@pytest.mark.parametrize("expr,inp", [
    ("$match(input.s, /(a+)+$/)", {"s": "a" * 5000 + "!"}),
    ("$contains(input.s, /(x+x+)+y/)", {"s": "x" * 50_000}),
    ("$replace(input.s, /(a|aa)*c/, 'z')", {"s": "a" * 20_000}),
    ("$split(input.s, /(\\w*)*$/)", {"s": "w" * 20_000 + "!"}),
])
def test_catastrophic_regular_expressions_run_in_linear_time(expr: str, inp: Any) -> None:
    # Python's backtracking engine takes longer than the age of the universe on these; RE2 does not backtrack.
    with cpu_timer() as cpu:
        evaluate("{% " + expr + " %}", {"input": inp}, 0)
    assert cpu.seconds < 1, f"{cpu.seconds:.2f} s of CPU time"  # about 1 ms each on RE2


@pytest.mark.parametrize("expr", ["[1..10000000]", "$count([0..1000000])",
                                  "$map([-5..999999], function($v){ $v })"])
def test_a_literal_range_past_the_limit_is_refused_at_validation(expr: str) -> None:
    doc = {"orbit": 1, "name": "wf", "version": "1", "steps": {"s": {"compute": "{% " + expr + " %}"}}}
    with pytest.raises(ValidationError) as exc:
        parse_definition(doc)
    assert "steps.s.compute" in str(exc.value) and f"more than {budget.MAX_ARRAY}" in str(exc.value)


@pytest.mark.parametrize("pattern", ["(a)\\1", "(?=a)b", "(?<!a)b"])
def test_backtracking_only_syntax_is_refused_at_validation(pattern: str) -> None:
    doc = {"orbit": 1, "name": "wf", "version": "1",
           "steps": {"s": {"compute": "{% $match(input.s, /" + pattern + "/) %}"}}}
    with pytest.raises(ValidationError) as exc:
        parse_definition(doc)
    assert "steps.s.compute" in str(exc.value) and "RE2" in str(exc.value)


@pytest.mark.parametrize("expr,expected", [
    ("$count([1..1000000])", 1_000_000),  # the documented limit itself is allowed
    ("$sum($map([1..2000], function($v){ $v }))", 2_001_000),
    ("$replace('a-b-c', /-/, '+')", "a+b+c"),
    ("$match('id-42', /id-(\\d+)/).groups[0]", "42"),
    ("$split('a1b2c', /\\d/)", ["a", "b", "c"]),
    ("$eval('1 + 2')", 3),
    ("$contains('Hello', /hello/i)", True),
    ("$pad('x', 5, '-')", "x----"),
    ("$join(['a', 'b'], ',')", "a,b"),
    ("$distinct([1, 2, 2, 3])", [1, 2, 3]),
])
def test_ordinary_expressions_are_unaffected(expr: str, expected: Any) -> None:
    assert evaluate("{% " + expr + " %}", ROOT, 0) == expected


def test_the_budget_is_per_evaluation_and_deterministic() -> None:
    expr = "{% ($f := function($n){ $n > 100000000 ? $n : $f($n + 1) }; $f(0)) %}"
    messages = set()
    for _ in range(2):
        with pytest.raises(ExpressionError) as exc:
            evaluate(expr, ROOT, 0)
        messages.add(str(exc.value))
    assert len(messages) == 1  # counted in steps, not seconds: the same every time (replay-safe)
    assert evaluate("{% 1 + 1 %}", ROOT, 0) == 2  # a fresh budget for the next one


def test_an_expression_longer_than_the_limit_is_refused_at_validation_quickly() -> None:
    long_expr = "{% " + " + ".join(["input.a"] * 60_000) + " %}"  # ~600 KB: took 20 s and 700 MB to refuse
    doc = {"orbit": 1, "name": "wf", "version": "1", "steps": {"s": {"compute": long_expr}}}
    with cpu_timer() as cpu, pytest.raises(ValidationError) as exc:  # what the refusal costs, however busy
        parse_definition(doc)
    assert cpu.seconds < 1
    assert "steps.s.compute" in str(exc.value)
    assert f"more than {budget.MAX_EXPRESSION_LENGTH}" in str(exc.value)


# --- through the engine: the step fails, the execution ends, the service keeps answering -----------

STEP_KINDS = {
    "compute": lambda expr: {"compute": "{% " + expr + " %}"},
    "when": lambda expr: {"when": "{% " + expr + " %}", "compute": "{% 1 %}"},
    "for": lambda expr: {"for": "{% " + expr + " %}", "compute": "{% item %}"},
    "task input": lambda expr: {"task": "w.echo", "input": {"v": "{% " + expr + " %}"}},
}


@pytest.mark.parametrize("kind", sorted(STEP_KINDS))
@pytest.mark.parametrize("name", ["tail recursion", "$eval of a recursive function from the input",
                                  "doubling a string", "range over the 1e6 limit"])
def test_a_runaway_step_fails_its_execution_with_expression_error(kind: str, name: str) -> None:
    expr, inp, which = RUNAWAYS[name]
    sim = sim_with({"ok": {"compute": "{% 'fine' %}"}, "bad": STEP_KINDS[kind](expr)})
    sim.register({"orbit": 1, "name": "other", "version": "1", "steps": {"a": {"compute": "{% 1 %}"}}})
    other = sim.start("other", {})
    sim.run_until_idle()

    hostile_id = f"hostile-{kind}".replace(" ", "-")  # execution ids take no spaces (issue 17a)

    def hostile() -> None:
        assert sim.start("wf", inp, id=hostile_id)
        sim.run_until_idle()

    def another_caller() -> None:
        assert sim.describe(other)["status"] == "COMPLETED"

    # answered within 1 s of CPU time the whole time the hostile expression runs (meanwhile.py)
    answered_meanwhile(hostile, another_caller)
    desc = sim.describe(hostile_id)
    assert desc["status"] == "FAILED"
    err = desc["steps"]["bad"]["error"]
    assert err["code"] == "EXPRESSION_ERROR" and f"budget exceeded: {which}" in err["message"]
    assert desc["error"]["code"] == "EXPRESSION_ERROR"
    assert sim.dead_letters == []
