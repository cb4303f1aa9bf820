"""Hostile definitions (issue 25 items 1 and Low; docs/security.md, docs/limits.md): an inline step
naming an arbitrary Python function, JSON Schemas that fetch or backtrack or explode, JSONata that
would run for ever, YAML alias bombs and oversized texts. Each is answered with one clear line
within its time limit, and nothing the caller named runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.security.harness import DevProcess, in_child, one_line_error

FUNCTIONS = {  # an inline `task` naming a module attribute, and an input that would prove it ran
    "os:system": "touch {marker}",
    "subprocess:getoutput": "touch {marker}",
    "builtins:eval": "__import__('pathlib').Path({marker!r}).touch()",
}


def _hostile(task: str, marker: Path) -> dict[str, Any]:
    return {"orbit": 1, "name": "hostile", "version": "1",
            "steps": {"run": {"task": task, "inline": True, "input": "{% input.cmd %}"}},
            "output": "{% steps.run.output %}"}


@pytest.mark.parametrize("task", sorted(FUNCTIONS))
def test_an_inline_task_naming_a_python_function_is_refused_and_a_stored_one_runs_nothing(
        task: str, tmp_path: Path) -> None:
    marker = tmp_path / "owned"
    cmd = FUNCTIONS[task].format(marker=str(marker))
    registered, stored = in_child(f"""
        sim = world()
        hostile = {_hostile(task, marker)!r}
        registered = call(sim, "POST", "/definitions", hostile)
        sim.register(hostile)  # stored before the rule, or its task left the deployment
        call(sim, "POST", "/executions", {{"workflow": "hostile", "id": "e1", "input": {{"cmd": {cmd!r}}}}})
        sim.run()
        emit([registered, sim.describe("e1")])
    """, f"registering or running an inline step naming {task}")
    status, body = registered
    assert status == 400, body
    assert one_line_error(body).startswith(f"steps.run.task: inline task {task!r} of step 'run' is not "
                                           "registered"), body
    assert stored["status"] == "FAILED" and stored["error"]["code"] == "INLINE_TASK_NOT_FOUND", stored
    assert not marker.exists()


def test_orbit_dev_refuses_an_inline_task_its_workers_do_not_register(dev: DevProcess,
                                                                      tmp_path: Path) -> None:
    marker = tmp_path / "owned"
    for task in sorted(FUNCTIONS):
        status, body = dev.request("POST", "/definitions", _hostile(task, marker))
        assert status == 400, body
        assert f"inline task {task!r} of step 'run' is not registered" in one_line_error(body)
        assert "sec.echo" in body["error"]["message"]  # what this server does serve
        status, body = dev.request("POST", "/executions", {
            "workflow": "hostile", "input": {"cmd": FUNCTIONS[task].format(marker=str(marker))}})
        assert status == 404, body  # nothing was registered, so nothing can start
    assert not marker.exists()
    dev.still_serves("after-inline-refusals")


# ------------------------------------------------------------------------------- JSON Schemas
@pytest.mark.parametrize("ref", ["https://example.com/s.json", "http://127.0.0.1:9/x", "file:///etc/passwd",
                                 "other.json"])
def test_a_schema_reference_outside_the_schema_is_refused_at_registration(ref: str) -> None:
    status, body = in_child(f"""
        sim = world()
        emit(call(sim, "POST", "/definitions", definition("refs", {{"a": {{"compute": "{{% 1 %}}"}}}},
             input={{"type": "object", "properties": {{"order": {{"$ref": {ref!r}}}}}}})))
    """, "a schema $ref resolved over the network or the file system")
    assert status == 400, body
    assert "points outside this schema" in one_line_error(body) and "properties.order.$ref" in \
        body["error"]["message"]


def test_a_backtracking_pattern_is_answered_at_once_and_a_backreference_is_refused() -> None:
    started, described, refused = in_child("""
        sim = world()
        sim.register(definition("pat", {"a": {"compute": "{% 1 %}"}},
                                input={"type": "object", "properties": {"s": {"pattern": "^(a+)+$"}}}))
        started = call(sim, "POST", "/executions", {"workflow": "pat", "id": "e1",
                                                    "input": {"s": "a" * 50_000 + "!"}})
        sim.run()
        refused = call(sim, "POST", "/definitions", definition("backref", {"a": {"compute": "{% 1 %}"}},
                       input={"type": "object", "properties": {"s": {"pattern": "^(a)\\\\1$"}}}))
        emit([started, sim.describe("e1"), refused])
    """, "a catastrophic pattern matched by a backtracking engine")
    assert started[0] == 201, started
    assert described["status"] == "FAILED", described
    assert described["error"]["code"] == "INPUT_CONTRACT_VIOLATION", described
    status, body = refused
    assert status == 400 and "is not supported" in one_line_error(body), body


def test_a_self_referring_schema_and_a_huge_unique_array_are_answered_within_budget() -> None:
    twice = {"$defs": {"t": {"allOf": [{"items": {"$ref": "#/$defs/t"}}, {"items": {"$ref": "#/$defs/t"}}]}},
             "$ref": "#/$defs/t"}
    deep, unique = in_child(f"""
        sim = world()
        nested = 0
        for _ in range(60):
            nested = [nested]
        sim.register(definition("twice", {{"a": {{"compute": "{{% 1 %}}"}}}},
                                input={{"type": "object", "properties": {{"tree": {{"$ref": "#/$defs/t"}}}},
                                       "$defs": {twice["$defs"]!r}}}))
        sim.register(definition("uniq", {{"a": {{"compute": "{{% 1 %}}"}}}},
                                input={{"type": "array", "uniqueItems": True}}))
        call(sim, "POST", "/executions", {{"workflow": "twice", "id": "e1", "input": {{"tree": nested}}}})
        many = [{{"k": i, "v": [i, str(i)]}} for i in range(20_000)] + [{{"v": [7, "7"], "k": 7}}]
        call(sim, "POST", "/executions", {{"workflow": "uniq", "id": "e2", "input": many}})
        sim.run()
        emit([sim.describe("e1")["error"], sim.describe("e2")["error"]])
    """, "a schema check that is exponential (self-reference) or quadratic (uniqueItems)")
    assert deep["code"] == "INPUT_CONTRACT_VIOLATION" and "took more than" in deep["message"], deep
    assert unique["code"] == "INPUT_CONTRACT_VIOLATION" and "non-unique" in unique["message"], unique


# ------------------------------------------------------------------------------- expressions
@pytest.mark.parametrize("expression,budget", [
    ("($f := function($n) { $f($n + 1) }; $f(0))", "expression budget exceeded"),
    ("$count($map([1..1000000], function($v) { $v * 2 }))", "expression budget exceeded"),
    ("($s := 'ab'; $s := $s & $s & $s & $s; $pad('x', 1000000000))", "expression budget exceeded"),
    ("$eval(input.code)", "expression budget exceeded"),
], ids=["recursion", "map-a-million", "pad-a-billion", "eval-from-input"])
def test_an_unbounded_expression_fails_its_step_naming_the_budget(expression: str, budget: str) -> None:
    described = in_child(f"""
        sim = world()
        sim.register(definition("loop", {{"a": {{"compute": {"{% " + expression + " %}"!r}}}}}))
        code = "($g := function($n) {{ $g($n + 1) }}; $g(0))"
        call(sim, "POST", "/executions", {{"workflow": "loop", "id": "e1", "input": {{"code": code}}}})
        sim.run()
        emit(sim.describe("e1"))
    """, f"a JSONata expression without a budget: {expression}")
    assert described["status"] == "FAILED", described
    error = described["error"]
    assert error["code"] == "EXPRESSION_ERROR" and not error["retryable"], error
    assert budget in error["message"] and "\n" not in error["message"], error


# ------------------------------------------------------------------------------- definition texts
def _alias_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("text,expected", [
    ("orbit: 1\nname: bomb\n" + _alias_bomb() + "steps:\n  a:\n    compute: 1\n    input: *a8\n",
     "values (YAML anchors and aliases count once per use)"),
    ("orbit: 1\nname: big\nsteps:\n  a:\n    compute: '{% " + "1 + " * 100_000 + "1 %}'\n",
     "characters"),
    ("x: " + "[" * 100_000 + "]" * 100_000 + "\n", "nesting"),
], ids=["alias-bomb", "400kb-expression", "deep-nesting"])
def test_a_hostile_definition_text_is_refused_in_one_line(text: str, expected: str) -> None:
    got = in_child(f"""
        from orbit.core.definition import load_definition
        try:
            load_definition({text!r})
            emit("accepted")
        except Exception as e:  # DefinitionError / ValidationError: one line naming the limit
            emit([type(e).__name__, str(e)])
    """, "a definition text walked or parsed without a limit")
    assert got != "accepted"
    kind, message = got
    assert kind in ("DefinitionError", "ValidationError") and expected in message, got
    assert len(message.splitlines()) <= 3 and "Traceback" not in message, got
