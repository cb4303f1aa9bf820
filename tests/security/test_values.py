"""Values an execution produces that history cannot store (issue 25 item 4; docs/security.md,
"Values an execution produces"): an inline task's datetime, set, bytes, Decimal or lone surrogate,
an expression building one, never strand the execution: the step fails with VALUE_NOT_STORABLE,
naming the type, and is not retried. (The worker path: test_bounds.py.)"""

from __future__ import annotations

from tests.security.harness import in_child

UNSTORABLE = {"datetime": "datetime.datetime(2026, 1, 1)", "set": "{'a'}", "bytes": "b'x'",
              "Decimal": "decimal.Decimal('1.5')", "surrogate": "'\\udc00'"}


def test_an_inline_task_result_json_cannot_hold_fails_the_step_naming_the_type() -> None:
    got = in_child(f"""
        import datetime, decimal
        from tests.unit.inline_world import World
        values = {{name: eval(text) for name, text in {UNSTORABLE!r}.items()}}
        def returning(value):
            return lambda input, ctx: {{"deep": [value]}}
        w = World({{f"sec.{{name}}": returning(value) for name, value in values.items()}})
        for name in values:
            w.register(definition(f"wf-{{name}}", {{"a": {{"task": f"sec.{{name}}", "inline": True}}}}))
            w.api.start(f"wf-{{name}}", None, {{}}, f"e-{{name}}")
        w.settle()
        emit({{name: w.api.describe(f"e-{{name}}") for name in values}})
    """, "an inline task result that JSON cannot hold")
    for name, described in got.items():
        assert described["status"] == "FAILED", (name, described)
        error = described["error"]
        assert error["code"] == "VALUE_NOT_STORABLE" and not error["retryable"], (name, error)
        assert name.lower() in error["message"].lower() and "\n" not in error["message"], (name, error)


def test_an_expression_building_an_unstorable_value_fails_its_step() -> None:
    got = in_child("""
        sim = world()
        deep = "{% " + "{'k': " * 70 + "1" + "}" * 70 + " %}"
        sim.register(definition("deep", {"a": {"compute": deep}}))
        sim.register(definition("lone", {"a": {"compute": '{% "\\\\udfff" %}'}}))
        call(sim, "POST", "/executions", {"workflow": "deep", "id": "e1"})
        call(sim, "POST", "/executions", {"workflow": "lone", "id": "e2"})
        sim.run()
        emit([sim.describe("e1")["error"], sim.describe("e2")["error"]])
    """, "an expression value stored without a check")
    for error in got:
        assert error["code"] == "VALUE_NOT_STORABLE" and "steps.a.output" in error["message"], got
