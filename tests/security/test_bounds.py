"""Issue 25 items 4 and 5, and Low: a worker result that JSON cannot hold fails its attempt with
VALUE_NOT_STORABLE instead of stranding the execution; every question about a schedule is answered
in bounded time and nothing stored breaks a listing; `orbit test` refuses a YAML alias bomb; a
`for` over a million items fails with a clear error. (Written against branch sec-values-schedules
before it was merged; on the main before it, the worker case crashed the worker and the others
answered 500 or not at all.)"""

from __future__ import annotations

from pathlib import Path

from tests.security.harness import in_child, one_line_error

ROOT = Path(__file__).resolve().parents[2]
SHORT_S = 10.0  # before the fix: 34 s (exclusions), 77 s (alias bomb), 177 s (a million items)
UNSTORABLE = {"datetime": "datetime.datetime(2026, 1, 1)", "set": "{'a'}", "bytes": "b'x'",
              "Decimal": "decimal.Decimal('1.5')", "surrogate": "'\\udc00'"}


def test_a_worker_result_json_cannot_hold_fails_the_attempt_instead_of_stranding_the_execution() -> None:
    """The worker's answer crosses a queue as the SQS adapter encodes it (adapters/sqs.py): before the
    fix the encoder raised inside the worker SDK and the step stayed SCHEDULED for good. (The same
    values from an inline step: test_values.py.)"""
    got = in_child(f"""
        import datetime, decimal
        from orbit.adapters.memory import MemoryQueues
        from orbit.adapters.sqs import decode_body, encode_body
        from tests.unit import inline_world
        from tests.unit.inline_world import World

        class OverTheWire(MemoryQueues):  # what reaches the decider went through SQS's encoding
            def send_decision(self, message, delay_s=0):
                super().send_decision(decode_body(encode_body(message, None, 262_144), None), delay_s)

        inline_world.MemoryQueues = OverTheWire
        values = {{name: eval(text) for name, text in {UNSTORABLE!r}.items()}}
        def returning(value):
            return lambda input, ctx: {{"deep": [value]}}
        w = World({{f"sec.{{name}}": returning(value) for name, value in values.items()}})
        for name in values:
            w.register(definition(f"wf-{{name}}", {{"a": {{"task": f"sec.{{name}}"}}}}))
            w.api.start(f"wf-{{name}}", None, {{}}, f"e-{{name}}")
        w.settle()
        emit({{name: w.api.describe(f"e-{{name}}") for name in values}})
    """, "a worker result that JSON cannot hold", timeout_s=SHORT_S)
    for name, described in got.items():
        assert described["status"] == "FAILED", (name, described)
        error = described["error"]
        assert error["code"] == "VALUE_NOT_STORABLE" and not error["retryable"], (name, error)
        assert name.lower() in error["message"].lower() and "\n" not in error["message"], (name, error)


SCHEDULES = """
import json
from tests.unit.test_schedule_service import build
def ask(engine, method, path, body=None):
    return list(handle_request(engine, method, path, None if body is None else json.dumps(body), {}))
"""


def test_pathological_exclusions_are_answered_in_bounded_time() -> None:
    created, described, listed = in_child("""
        svc, engine, clock, arm = build()
        # each candidate cost a search to the next 29 February per exclusion; the last two hide the rest
        hiding = ["0 0 29 2 *"] * 98 + ["0-58 * * * *", "59 * * * *"]
        spec = {"id": "s", "workflow": "wf", "every": "1s", "exclude": hiding}
        emit([ask(engine, "POST", "/schedules", spec), ask(engine, "GET", "/schedules/s"),
              ask(engine, "GET", "/schedules")])
    """, "leap-day exclusions searched candidate by candidate", timeout_s=SHORT_S, setup=SCHEDULES)
    status, body = created
    assert status == 400 and "spec.exclude" in one_line_error(body), body
    assert described[0] == 404 and listed[0] == 200, (described, listed)


def test_a_schedule_past_the_year_9999_is_a_400_and_the_listing_still_answers() -> None:
    created, listed = in_child("""
        svc, engine, clock, arm = build()
        late = {"id": "y", "workflow": "wf", "cron": "0 0 1 1 *", "start": "9999-12-31T23:59:00Z"}
        emit([ask(engine, "POST", "/schedules", late), ask(engine, "GET", "/schedules")])
    """, "a schedule search past the year 9999", timeout_s=SHORT_S, setup=SCHEDULES)
    status, body = created
    assert status == 400, body
    one_line_error(body)
    assert listed[0] == 200, listed


def test_a_backfill_from_year_1_is_a_400() -> None:
    created, backfill = in_child("""
        svc, engine, clock, arm = build()
        created = ask(engine, "POST", "/schedules", {"id": "b", "workflow": "wf", "cron": "0 0 1 1 *",
                                                     "timezone": "America/Los_Angeles"})
        emit([created, ask(engine, "POST", "/schedules/b/backfill",
                           {"start": "0001-01-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"})])
    """, "a backfill from the year 1", timeout_s=SHORT_S, setup=SCHEDULES)
    assert created[0] == 201, created
    status, body = backfill
    assert status == 400, body
    one_line_error(body)


def test_orbit_test_refuses_a_yaml_alias_bomb(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    (tmp_path / "wf.yaml").write_text((ROOT / "examples" / "order_fulfilment.yaml").read_text())
    spec = tmp_path / "bomb.test.yaml"
    spec.write_text("definition: wf.yaml\n" + "\n".join(lines) + "\ntests:\n  t:\n    input: *a8\n")
    code, printed = in_child(f"""
        import contextlib, io
        from orbit.cli.main import main
        out = io.StringIO()
        with contextlib.redirect_stderr(out), contextlib.redirect_stdout(out):
            code = main(["test", {str(spec)!r}])
        emit([code, out.getvalue()])
    """, "orbit test walking a YAML alias bomb (10^9 values from 1.3 KB)", timeout_s=SHORT_S)
    assert code != 0 and "values" in printed and "Traceback" not in printed, printed


def test_a_for_over_a_million_items_fails_its_step_with_a_clear_error() -> None:
    described = in_child("""
        sim = world()
        sim.register(definition("wide", {"each": {"compute": "{% item * 2 %}", "for": "{% [1..1000000] %}"}}))
        sim.start("wide", {}, id="e1")
        sim.run_until_idle()
        emit(sim.describe("e1"))
    """, "a `for` that starts a million elements", timeout_s=SHORT_S)
    assert described["status"] == "FAILED", described
    error = described["steps"]["each"]["error"]
    assert error["code"] == "TOO_MANY_ITEMS" and not error["retryable"], error
    assert "limit" in error["message"] and "\n" not in error["message"], error
