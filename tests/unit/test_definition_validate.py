"""Validation: each kind of problem, reported with its path, all in one pass."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.core.definition import parse_definition, validate_definition
from orbit.errors import ValidationError


def doc(steps: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    return {"orbit": 1, "name": "w", "steps": steps if steps is not None else {"a": {"task": "t"}}, **top}


def problems(document: Any) -> dict[str, str]:
    return {p.path: p.message for p in validate_definition(document)}


def test_valid_document_has_no_problems() -> None:
    assert validate_definition(doc()) == []


@pytest.mark.parametrize("step, path, text", [
    ({"task": "t", "retry": {"max_attempts": 0}}, "steps.s.retry.max_attempts", "must be >= 1"),
    ({"task": "t", "retry": {"max_attempts": 1.5}}, "steps.s.retry.max_attempts", "whole number"),
    ({"task": "t", "retry": {"max_attempts": True}}, "steps.s.retry.max_attempts", "whole number"),
    ({"task": "t", "retry": {"backoff": "soon"}}, "steps.s.retry.backoff", "not a duration"),
    ({"task": "t", "retry": {"jitter": "half"}}, "steps.s.retry.jitter", "none or full"),
    ({"task": "t", "retry": "always"}, "steps.s.retry", "must be a mapping"),
    ({"task": "t", "timeout": "0s"}, "steps.s.timeout", "longer than 0"),
    ({"task": "t", "timeout": "P1M"}, "steps.s.timeout", "years or months"),
    ({"task": "t", "queue_timeout": 5}, "steps.s.queue_timeout", "has no unit"),
    ({"task": ""}, "steps.s.task", "non-empty string"),
    ({"task": 3}, "steps.s.task", "non-empty string"),
    ({"workflow": None}, "steps.s.workflow", "non-empty string"),
    ({"wait_for": ["x"]}, "steps.s.wait_for", "non-empty string"),
    ({"sleep": {"untill": "x"}}, "steps.s.sleep.untill", "did you mean 'until'?"),
    ({"sleep": {"until": 5}}, "steps.s.sleep.until", "expression or an ISO 8601"),
    ({"sleep": {"until": "tomorrow"}}, "steps.s.sleep.until", "not 'tomorrow'"),
    ({"sleep": {"until": "{% $now( %}"}}, "steps.s.sleep.until", "does not parse"),
    ({"sleep": "forever"}, "steps.s.sleep", "not a duration"),
    ({"http": "GET https://x"}, "steps.s.http", "method and url"),
    ({"http": {"method": "GET", "url": "ftp://x"}}, "steps.s.http.url", "http:// or https://"),
    ({"http": {"method": "GET", "url": "https://x", "hedaers": {}}}, "steps.s.http.hedaers",
     "did you mean 'headers'?"),
    ({"http": {"method": "GET", "url": "https://x", "headers": [1]}}, "steps.s.http.headers", "mapping"),
    ({"compute": "{% ( %}"}, "steps.s.compute", "does not parse"),
    ({"task": "t", "for": "input.items"}, "steps.s.for", "must be an expression"),
    ({"task": "t", "when": "yes"}, "steps.s.when", "must be an expression"),
    ({"task": "t", "after": "a"}, "steps.s.after", "list of step names"),
    ({"task": "t", "after": [1]}, "steps.s.after[0]", "must be a step name"),
    ({"task": "t", "for": "{% input %}", "concurrency": 0}, "steps.s.concurrency", ">= 1"),
    ({"task": "t", "for": "{% input %}", "tolerated_failures": -1}, "steps.s.tolerated_failures", ">= 0"),
    ({"sleep": "1s", "input": {}}, "steps.s.input", "not used by a sleep step"),
    ({"compute": 1, "queue_timeout": "1s"}, "steps.s.queue_timeout", "not used by a compute step"),
    ({"task": "t", "queue": "a b"}, "steps.s.queue", "queue name"),
    ({"task": "t", "compensate": "undo"}, "steps.s.compensate", "step body"),
    ({"task": "t", "compensate": {"input": {}}}, "steps.s.compensate", "exactly one of task, http, workflow"),
    ({"task": "t", "compensate": {"wait_for": "x"}}, "steps.s.compensate.wait_for",
     "cannot be a wait_for step"),
    ({"task": "t", "compensate": {"task": "u", "tiemout": "1s"}}, "steps.s.compensate.tiemout",
     "did you mean 'timeout'?"),
    ({"task": "t", "compensate": {"http": {"method": "GET"}}}, "steps.s.compensate.http", "needs `url`"),
    ({"task": "t", "description": 5}, "steps.s.description", "must be a string"),
    ({"workflow": "child", "timeout": "1h"}, "steps.s.timeout", "not used by a workflow step"),
    ({"workflow": "child", "retry": {}}, "steps.s.retry", "not used by a workflow step"),
])
def test_step_problem_is_reported_at_its_path(step: dict[str, Any], path: str, text: str) -> None:
    found = problems(doc({"s": step}))
    assert path in found, found
    assert text in found[path]


@pytest.mark.parametrize("top, path, text", [
    ({"orbit": True}, "orbit", "unsupported format True"),
    ({"orbit": "1"}, "orbit", "unsupported format '1'"),
    ({"name": ""}, "name", "must be 1-128"),
    ({"version": 1.5}, "version", "short string"),
    ({"version": "a b"}, "version", "short string"),
    ({"timeout": "1x"}, "timeout", "not a duration"),
    ({"input": "object"}, "input", "JSON Schema"),
    ({"output_schema": {"type": "objekt"}}, "output_schema", "invalid JSON Schema"),
    ({"defaults": []}, "defaults", "must be a mapping"),
    ({"defaults": {"retries": {}}}, "defaults.retries", "did you mean 'retry'?"),
    ({"signals": ["approval"]}, "signals", "must be a mapping"),
    ({"signals": {"go": {"shema": {}}}}, "signals.go.shema", "did you mean 'schema'?"),
    ({"signals": {"go": 3}}, "signals.go", "must be a mapping"),
    ({"output": "{% steps. %}"}, "output", "does not parse"),
    ({"stepz": {}}, "stepz", "did you mean 'steps'?"),
    ({"when": 1}, "when", "unknown key in a definition"),
])
def test_top_level_problem_is_reported_at_its_path(top: dict[str, Any], path: str, text: str) -> None:
    found = problems(doc(**top))
    assert path in found, found
    assert text in found[path]


def test_non_json_values_are_reported() -> None:
    import datetime
    found = problems(doc({"a": {"task": "t", "input": {"d": datetime.date(2024, 1, 1), 1: "x",
                                                          "n": float("nan")}}}))
    assert "YAML reads unquoted dates" in found["steps.a.input.d"]
    assert "key 1 is not a string" in found["steps.a.input"]
    assert "not a JSON number" in found["steps.a.input.n"]


def test_required_top_level_keys() -> None:
    assert set(problems({})) == {"orbit", "name", "steps"}
    assert "non-empty mapping" in problems(doc({}))["steps"]


def test_step_names_must_fit_unit_keys() -> None:
    found = problems(doc({"a:b": {"task": "t"}, "c[0]": {"task": "t"}, "ok_name-2": {"task": "t"}}))
    assert set(found) == {"steps.a:b", "steps.c[0]"}


def test_sleep_until_a_literal_time_is_fine() -> None:
    assert validate_definition(doc({"s": {"sleep": {"until": "2026-01-01T09:00:00Z"}}})) == []


def test_wait_for_an_undeclared_signal_is_fine() -> None:
    assert validate_definition(doc({"w": {"wait_for": "approval", "timeout": "7d"}})) == []


def test_two_cycles_are_both_named() -> None:
    found = validate_definition(doc({
        "a": {"task": "t", "after": ["b"]}, "b": {"task": "t", "after": ["a"]},
        "c": {"task": "t", "input": "{% steps.d.output %}"}, "d": {"compute": "{% steps.c.output %}"},
    }))
    cycles = sorted(p.message.split(": ", 1)[1] for p in found)
    assert cycles == ["a -> b -> a", "c -> d -> c"]


def test_compensate_may_read_its_own_step_and_later_steps() -> None:
    assert validate_definition(doc({
        "a": {"task": "t", "compensate": {"task": "u", "input": "{% [steps.a.output, steps.b.output] %}"}},
        "b": {"task": "t", "after": ["a"]},
    })) == []


def test_all_problems_in_one_pass() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_definition({"orbit": 2, "name": "w", "steps": {
            "a": {"task": "t", "retry": {"max_attempts": 0}},
            "b": {"task": "t", "after": ["zz"], "timeout": "soon"},
        }})
    assert [p.path for p in caught.value.problems] == [
        "orbit", "steps.a.retry.max_attempts", "steps.b.timeout", "steps.b.after[0]"]
    assert "steps.a.retry.max_attempts: must be >= 1" in str(caught.value)


def test_hooks_must_name_a_signal_or_wait_for_step() -> None:
    found = problems(doc({
        "w": {"wait_for": "approval"},
        "n": {"http": {"method": "POST", "url": "https://x.org",
                       "body": {"a": "{% hooks.approval.token %}", "b": "{% hooks.aproval.token %}",
                                "c": "{% hooks.review.token %}"}}},
    }, signals={"review": {}}))
    assert found == {"steps.n.http.body.b": "reads hooks.aproval, but no signal or wait_for step is named "
                                            "'aproval' (did you mean 'approval'?)"}


def test_alias_bombs_and_deep_nesting_are_refused_quickly() -> None:
    from cpu_time import cpu_timer
    from orbit.core.definition import load_definition

    bomb = "orbit: 1\nname: w\na: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8)) + "steps: {s: {task: t}}\n"
    with cpu_timer() as cpu, pytest.raises(ValidationError, match="too large"):
        load_definition(bomb)
    assert cpu.seconds < 1, f"{cpu.seconds:.2f} s of CPU time"  # about 0.04 s: the aliases are never expanded
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["x"] = {}
        node = node["x"]
    assert "nested more than" in problems(doc({"a": {"task": "t", "input": deep}}))[""]


def test_expressions_read_only_the_root_fields() -> None:
    found = problems(doc({
        "a": {"task": "t", "input": {"x": "{% inputs.id %}", "y": "{% input.items[sku = item.sku] %}"}},
        "b": {"task": "t", "input": "{% item.sku %}"},
        "c": {"task": "t", "for": "{% input.items %}", "when": "{% index > 0 %}",
              "input": {"sku": "{% item.sku %}", "i": "{% index %}"},
              "compensate": {"task": "u", "input": "{% item %}"}},
    }, output={"o": "{% $$.execution.id %}", "p": "{% executions.id %}"}))
    assert found == {
        "steps.a.input.x": "reads `inputs`, which is not in the expression root "
                           "(input, steps, execution, hooks) (did you mean 'input'?)",
        "steps.b.input": "reads `item`, which exists only per element of a `for` step "
                         "(in its input, http, compute, sleep and compensate)",
        "steps.c.when": "reads `index`, which exists only per element of a `for` step "
                        "(in its input, http, compute, sleep and compensate)",
        "output.p": "reads `executions`, which is not in the expression root "
                    "(input, steps, execution, hooks) (did you mean 'execution'?)",
    }
