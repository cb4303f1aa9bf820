"""Every JSON Schema Orbit evaluates matches its regular expressions on RE2 (docs/limits.md).

`^(a+)+$` against 50,000 `a`s and a `!` backtracks for ever on Python's `re`. Each scenario that
checks such a value runs in a child process with a generous timeout, so a regression fails the
test instead of hanging the suite; what is asserted is the answer (refused, naming the path),
never a time. A pattern RE2 cannot run (a backreference, lookaround) is refused when the
definition is registered, naming its path in the schema, and a definition stored before that
rule still loads (its check then fails, naming the pattern)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from orbit.core.definition import parse_definition
from orbit.core.definition.contracts import check_schema
from orbit.errors import ValidationError
from orbit.service.http import handle_request
from orbit.testing.simulator import Simulator

from tests.unit.child_run import run_in_child
from tests.unit.dsl_harness import definition

CATASTROPHIC = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
BACKREF = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a)\\1$"}}}
TIMEOUT_S = 20  # generous: RE2 answers in milliseconds; Python's re would not answer at all

SETUP = """
BAD = "a" * 50_000 + "!"
SCHEMA = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
"""


def _in_child(body: str) -> Any:
    """Run `body` in a fresh interpreter (BAD and SCHEMA defined); its `emit(...)`."""
    return run_in_child(body, TIMEOUT_S, "a schema pattern backtracked (not on RE2?)", SETUP)


def test_start_input_with_a_catastrophic_pattern_is_answered_through_the_api() -> None:
    status, body, described = _in_child("""
        sim = Simulator(start_ms=0)
        sim.register(definition({"a": {"compute": "{% 1 %}"}}, input=SCHEMA))
        status, body = handle_request(sim.engine, "POST", "/executions",
                                      {"workflow": "wf", "id": "e1", "input": {"s": BAD}})
        sim.run()
        emit([status, body, sim.describe("e1")])
    """)
    assert status == 201, body
    assert described["status"] == "FAILED"
    error = described["error"]
    assert error["code"] == "INPUT_CONTRACT_VIOLATION"
    assert error["message"].startswith("input.s: ") and "does not match '^(a+)+$'" in error["message"]


def test_a_signal_payload_with_a_catastrophic_pattern_is_refused_at_the_api() -> None:
    status, body, good = _in_child("""
        sim = Simulator(start_ms=0)
        sim.register(definition({"w": {"wait_for": "go"}}, signals={"go": {"schema": SCHEMA}}))
        sim.start("wf", {}, id="e1")
        sim.run_until_idle()
        status, body = handle_request(sim.engine, "POST", "/executions/e1/signals/go",
                                      {"payload": {"s": BAD}})
        good, _ = handle_request(sim.engine, "POST", "/executions/e1/signals/go",
                                   {"payload": {"s": "aaa"}})
        emit([status, body, good])
    """)
    assert status == 400 and body["error"]["code"] == "PAYLOAD_REFUSED", body
    assert body["error"]["message"].startswith("signal 'go': payload refused: payload.s: ")
    assert "does not match '^(a+)+$'" in body["error"]["message"]
    assert good in (200, 202)


def test_an_output_schema_with_a_catastrophic_pattern_fails_the_execution() -> None:
    described = _in_child("""
        sim = Simulator(start_ms=0)
        sim.register(definition({"a": {"compute": "{% input.s %}"}}, output={"s": "{% steps.a.output %}"},
                                output_schema=SCHEMA))
        sim.start("wf", {"s": BAD}, id="e1")
        sim.run()
        emit(sim.describe("e1"))
    """)
    assert described["status"] == "FAILED"
    assert described["error"]["code"] == "OUTPUT_CONTRACT_VIOLATION"
    assert described["error"]["message"].startswith("output.s: ")
    assert "does not match '^(a+)+$'" in described["error"]["message"]


def test_a_code_workflows_signal_schema_with_a_catastrophic_pattern_is_answered() -> None:
    status, body, output = _in_child("""
        import orbit
        from orbit.workflow import CodeRegistry

        @orbit.workflow("code-sig", build="b1", registry=CodeRegistry(), signals={"go": {"schema": SCHEMA}})
        def flow(ctx, input):
            return ctx.wait_for("go")

        sim = Simulator(start_ms=0)
        sim.register(flow)
        sim.start("code-sig", {}, id="c1")
        sim.run_until_idle()
        status, body = handle_request(sim.engine, "POST", "/executions/c1/signals/go",
                                      {"payload": {"s": BAD}})
        sim.signal("c1", "go", {"s": "aa"})
        sim.run()
        emit([status, body, sim.describe("c1").get("output")])
    """)
    assert status == 400 and body["error"]["code"] == "PAYLOAD_REFUSED", body
    message = body["error"]["message"]
    assert "payload.s: " in message and "does not match '^(a+)+$'" in message
    assert output == {"s": "aa"}


def test_a_code_workflows_task_contract_with_a_catastrophic_pattern_is_answered() -> None:
    described = _in_child("""
        import orbit
        from orbit.testing.simulator import succeed
        from orbit.workflow import CodeRegistry

        @orbit.workflow("code-task", build="b1", registry=CodeRegistry(), tasks={"t.a": {"input": SCHEMA}})
        def flow(ctx, input):
            return ctx.step("t.a", {"s": input["s"]})

        sim = Simulator(start_ms=0)
        sim.register(flow)
        sim.worker("t.a", succeed({}))
        sim.start("code-task", {"s": BAD}, id="c1")
        sim.run()
        emit(sim.describe("c1"))
    """)
    assert described["status"] == "FAILED", described
    assert "INPUT_CONTRACT_VIOLATION" in json.dumps(described["error"])
    assert "does not match '^(a+)+$'" in json.dumps(described["error"])


# -- patterns RE2 cannot run: refused when registered, by their path -----------------------------

@pytest.mark.parametrize(("extra", "path"), [
    ({"input": BACKREF}, "input.properties.s.pattern"),
    ({"output_schema": {"patternProperties": {"(?=x)": {}}}}, "output_schema.patternProperties"),
    ({"signals": {"go": {"schema": {"prefixItems": [{"pattern": "(?<!y)x"}]}}}},
     "signals.go.schema.prefixItems[0].pattern"),
    ({"input": {"unevaluatedProperties": False, "patternProperties": {"^a": {}}}},
     "input.unevaluatedProperties"),
    ({"input": {"properties": {"s": {"pattern": "a" * 1001}}}}, "input.properties.s.pattern"),
])
def test_a_pattern_re2_cannot_run_is_refused_at_registration_naming_its_path(extra: Any, path: str) -> None:
    doc = definition({"a": {"compute": "{% 1 %}"}}, **extra)
    with pytest.raises(ValidationError) as info:
        parse_definition(doc)
    problems = [(p.path, p.message) for p in info.value.problems]
    assert len(problems) == 1 and problems[0][0] == path, problems
    assert "\n" not in problems[0][1]
    assert "RE2" in problems[0][1] or "more than 1000" in problems[0][1]


def test_post_definitions_refuses_a_backreference_with_its_path() -> None:
    sim = Simulator(start_ms=0)
    status, body = handle_request(sim.engine, "POST", "/definitions",
                                  definition({"a": {"compute": "{% 1 %}"}}, input=BACKREF))
    assert status == 400, body
    problem = body["error"]["problems"][0]
    assert problem["path"] == "input.properties.s.pattern"
    assert "regular expression /^(a)\\1$/ is not supported" in problem["message"]


def test_a_stored_definition_with_such_a_pattern_still_loads_and_its_check_names_the_pattern() -> None:
    doc = definition({"a": {"compute": "{% 1 %}"}}, input=BACKREF)
    sim = Simulator(start_ms=0)
    sim.register(parse_definition(doc, stored=True))  # as the registry reads back an older registration
    sim.start("wf", {"s": "aa"}, id="e1")
    sim.run()
    error = sim.describe("e1")["error"]
    assert error["code"] == "INPUT_CONTRACT_VIOLATION" and not error["retryable"]
    assert error["message"].startswith("input: the schema cannot be applied: input.properties.s.pattern: "
                                       "regular expression /^(a)\\1$/ is not supported")


def test_a_code_workflows_backreference_signal_schema_refuses_the_payload_naming_the_pattern() -> None:
    import orbit
    from orbit.workflow import CodeRegistry

    @orbit.workflow("code-ref", build="b1", registry=CodeRegistry(), signals={"go": {"schema": BACKREF}})
    def flow(ctx: Any, input: Any) -> Any:
        return ctx.wait_for("go")

    sim = Simulator(start_ms=0)
    sim.register(flow)
    sim.start("code-ref", {}, id="c1")
    sim.run_until_idle()
    status, body = handle_request(sim.engine, "POST", "/executions/c1/signals/go",
                                  {"payload": {"s": "aa"}})
    assert status == 400 and body["error"]["code"] == "PAYLOAD_REFUSED"
    assert "signals.go.schema.properties.s.pattern: regular expression /^(a)\\1$/ is not supported" \
        in body["error"]["message"]


def test_no_schema_check_runs_on_pythons_re(monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    def backtracking(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a schema pattern ran on Python's re")

    monkeypatch.setattr(re, "search", backtracking)  # what jsonschema's own keywords call
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}},
              "patternProperties": {"^(x+)+$": {"type": "integer"}}, "additionalProperties": False}
    for code in ("INPUT_CONTRACT_VIOLATION", "OUTPUT_CONTRACT_VIOLATION", "PAYLOAD_REFUSED"):
        err = check_schema(schema, {"s": "a" * 50_000 + "!"}, code, label="v")
        assert err is not None and err.message.startswith("v.s: ")
        err = check_schema(schema, {"s": "a", "x" * 40 + "y": 1}, code, label="v")
        assert err is not None and "does not match any of the regexes: '^(x+)+$'" in err.message
        assert check_schema(schema, {"s": "aaa", "xxx": 1}, code) is None
