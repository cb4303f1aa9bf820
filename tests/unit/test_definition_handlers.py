"""Validation of `on_signal` handlers: every problem named with its path (docs/definitions.md)."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.core.definition import parse_definition, validate_definition
from orbit.errors import ValidationError


def handler(**steps: Any) -> dict[str, Any]:
    return {"steps": steps}


def doc(**extra: Any) -> dict[str, Any]:
    return {"orbit": 1, "name": "wf", "steps": {"approval": {"wait_for": "approval"}}, **extra}


def problems(document: dict[str, Any]) -> list[str]:
    return [str(p) for p in validate_definition(document)]


def test_validation_refuses_a_signal_both_waited_for_and_handled_naming_the_path() -> None:
    found = problems(doc(on_signal={"approval": handler(a={"compute": "{% 1 %}"})}))
    assert found == ["on_signal.approval: signal 'approval' is also waited for by steps.approval.wait_for; "
                     "a signal either resumes a wait_for step or starts a handler, not both (rename one)"]
    with pytest.raises(ValidationError, match="on_signal.approval"):
        parse_definition(doc(on_signal={"approval": handler(a={"compute": "{% 1 %}"})}))


@pytest.mark.parametrize(("handlers", "expected"), [
    ([], "on_signal: must be a non-empty mapping"),
    ({"x": {}}, "on_signal.x.steps: required"),
    ({"x": {"steps": {}}}, "on_signal.x.steps: must be a non-empty mapping of step names to steps, not an"),
    ({"x": handler(a={"wait_for": "y"})}, "on_signal.x.steps.a.wait_for: a handler cannot wait"),
    ({"x": handler(a={"task": "t", "after": ["zz"]})}, "on_signal.x.steps.a.after[0]: unknown step 'zz'"),
    ({"x": handler(a={"compute": "{% steps.b.output %}"}, b={"compute": "{% steps.a.output %}"})},
     "on_signal.x.steps.a: dependency cycle"),
    ({"x": handler(a={"compute": "{% evnt.a %}"})}, "(did you mean 'event'?)"),
    ({"x": {**handler(a={"compute": "{% 1 %}"}), "concurrency": 0}}, "on_signal.x.concurrency: must be >= 1"),
    ({"x": {**handler(a={"compute": "{% 1 %}"}), "serial": True}}, "on_signal.x.serial: unknown key"),
    ({"x": {**handler(a={"compute": "{% 1 %}"}), "output": "{% steps.zz.output %}"}},
     "on_signal.x.output: reads unknown step 'zz'"),
    ({"a@b": handler(a={"compute": "{% 1 %}"})}, "on_signal.a@b: a handled signal's name"),
])
def test_validation_names_each_problem_in_a_handler(handlers: Any, expected: str) -> None:
    found = problems(doc(on_signal=handlers))
    assert any(expected in p for p in found), found


def test_a_handler_reads_main_steps_and_hooks_of_handled_signals() -> None:
    assert problems(doc(on_signal={"x": handler(
        a={"compute": {"m": "{% main.steps.approval.output %}", "h": "{% hooks.x.token %}",
                       "e": "{% event %}"}})})) == []
    assert any("reads `event`" in p for p in problems(doc(output="{% event %}")))  # only in handlers
