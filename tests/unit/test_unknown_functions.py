"""A call of a function that does not exist is a validation problem (it would fail every
evaluation at run time with EXPRESSION_ERROR); bound names and the engine's own are not."""

from __future__ import annotations

import pytest
from orbit.core.definition.expression_names import unknown_functions


@pytest.mark.parametrize("text, unknown", [
    ("$sting(input.x)", ["sting"]),
    ("input.x ~> $uppercas", ["uppercas"]),
    ("$map(input.items, $string) & $bad() & $bad(1)", ["bad"]),
    ("($f := function($x){ $x * 2 }; $f(3))", []),  # bound in the expression
    ("$map([1, 2], function($v, $i){ $v + $i })", []),  # lambda parameters
    ("$string($now()) & $millis() & $random() & $shuffle([1])", []),  # JSONata's and the engine's
    ("input.x ~> $string", []),
    ("input.(", []),  # does not parse: reported as that, not as an unknown function
])
def test_unknown_functions(text: str, unknown: list[str]) -> None:
    assert unknown_functions(text) == unknown


def test_a_stored_definition_with_an_unknown_function_still_loads() -> None:
    """A definition registered before the check existed is reloaded by the registry with
    stored=True: refusing it then would strand its running executions (the call still fails its
    step with EXPRESSION_ERROR if it is ever evaluated)."""
    from orbit.core.definition.validate import validate_definition

    doc = {"orbit": 1, "name": "w", "version": "1",
           "steps": {"a": {"task": "t", "input": {"v": "{% $sting(input.x) %}"}}}}
    assert any("unknown function $sting" in p.message for p in validate_definition(doc))
    assert validate_definition(doc, stored=True) == []
