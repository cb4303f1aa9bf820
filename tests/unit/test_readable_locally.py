"""Readable locally (issue 31 §4): habits from Step Functions and Python get their own hint, a
code workflow's non-JSON return is reported at the user's line, a runtime expression error names
the values it read, `schedule describe` prints JSON, worker exceptions print as a traceback under
the local stack, and a fork that would reuse compensated steps asks for confirmation."""

from __future__ import annotations

import argparse
import io
import logging
import sys
from typing import Any

import pytest
from code_harness import Harness
from orbit.core.definition.expressions import evaluate, parse_expression
from orbit.core.definition.parse import DefinitionError, parse_definition
from orbit.errors import ExpressionError, ForkAfterCompensation
from orbit.service.http import handle_request
from orbit.workflow import CodeRegistry, workflow

from tests.unit.dsl_harness import sim_with

REG = CodeRegistry()


@pytest.mark.parametrize(("text", "hint"), [
    ("input.x == 1", "use = for equality (JSONata has no ==)"),
    ("input.a && input.b", "use `and` (JSONata has no &&)"),
    ("input.a || input.b", "use `or` (JSONata has no ||)"),
])
def test_jsonata_habits_get_their_hint(text: str, hint: str) -> None:
    with pytest.raises(ExpressionError) as e:
        parse_expression(text)
    assert str(e.value).endswith(hint)


def test_next_gets_use_after_on_the_next_step() -> None:
    with pytest.raises(DefinitionError) as e:
        parse_definition({"orbit": 1, "name": "n", "steps": {"a": {"compute": "{% 1 %}", "next": "b"},
                                                             "b": {"compute": "{% 2 %}"}}})
    assert "steps.a.next: unknown key in a step; use `after` on the next step" in str(e.value)


def test_a_runtime_expression_error_names_the_input_path_and_its_value() -> None:
    with pytest.raises(ExpressionError) as e:
        evaluate("{% input.amount + 1 %}", {"input": {"amount": "x"}}, 0)
    assert str(e.value).endswith("in '{% input.amount + 1 %}' (input.amount is \"x\", a string)")
    with pytest.raises(ExpressionError) as e:
        evaluate("{% 2 * input.order.total %}", {"input": {"order": {"total": None}}, "steps": {}}, 0)
    assert str(e.value).endswith("(input.order.total is null)")
    with pytest.raises(ExpressionError) as e:
        evaluate("{% $number(steps.a.output.code) %}", {"steps": {"a": {"output": {"code": "zz"}}}}, 0)
    assert "(steps.a.output.code is \"zz\", a string)" in str(e.value)


@workflow("returns-a-set", registry=REG)
def returns_a_set(ctx, input):
    seen = {1, 2}
    if input.get("list"):
        return sorted(seen)
    return seen


def test_a_code_workflow_returning_a_set_is_reported_at_the_users_return_line() -> None:
    h = Harness(returns_a_set)
    h.start("returns-a-set", {})
    d = h.describe()
    line = open(__file__).read().splitlines().index("    return seen") + 1
    assert d["status"] == "FAILED" and d["error"]["code"] == "VALUE_NOT_STORABLE"
    assert d["error"]["message"] == ("the workflow's output must be JSON data: output: set is not JSON "
                                     f"data at {__file__}:{line}")


def test_schedule_describe_prints_its_counts_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    from orbit.cli.schedule import _show

    _show(argparse.Namespace(json=False), {"id": "s", "workflow": "w", "overlap": "skip",
                                           "spec": {"cron": "0 * * * *", "timezone": "UTC"},
                                           "state": {"counts": {"started": 2, "skipped_overlap": 1}}})
    assert 'counts: {"skipped_overlap": 1, "started": 2}' in capsys.readouterr().out


def test_under_the_local_stack_a_worker_exception_prints_as_a_traceback() -> None:
    from aws_lambda_powertools import Logger
    from orbit.local.readable_logs import make_readable

    out = io.StringIO()
    logging.disable(logging.NOTSET)  # whatever a test before it in this worker left switched off
    Logger(service="orbit-readable-test", logger_handler=logging.StreamHandler(out), level="INFO")
    make_readable()
    try:
        {}["missing"]
    except KeyError:
        log = logging.getLogger("orbit-readable-test.worker")
        log.exception("task t (e-1/a) raised in go", extra={"step": "a"})
    text = out.getvalue()
    assert text.startswith("ERROR task t (e-1/a) raised in go [step=a]\nTraceback (most recent call last):")
    assert text.rstrip().endswith("KeyError: 'missing'") and "function_arn" not in text
    assert sys.exc_info() == (None, None, None)


def compensated() -> Any:
    sim = sim_with({
        "reserve": {"task": "t.r", "compensate": {"task": "t.undo"}},
        "pay": {"after": ["reserve"], "task": "t.p", "compensate": {"task": "t.refund"}},
        "ship": {"after": ["pay"], "compute": "{% $number('x') %}"}})
    for t in ("t.r", "t.undo", "t.p", "t.refund"):
        sim.worker(t, lambda i, c: {"ok": 1})
    sim.start("wf", {}, id="c1")
    sim.run()
    assert sim.describe("c1")["compensation"] == "completed"
    return sim


def test_a_fork_reusing_compensated_steps_is_refused_naming_them_unless_confirmed() -> None:
    sim = compensated()
    with pytest.raises(ForkAfterCompensation) as e:
        sim.engine.fork("c1", "ship", "c1-again")
    assert str(e.value) == ("a fork of 'c1' from step 'ship' would reuse the outputs of 'reserve', 'pay', "
                            "whose compensation ran (their effects were undone); confirm with "
                            "--despite-compensation (API: \"despite_compensation\": true)")
    request = {"from_step": "ship", "id": "c1-b"}
    status, body = handle_request(sim.engine, "POST", "/executions/c1/fork", request)
    assert status == 409 and "whose compensation ran" in body["error"]["message"]
    with pytest.raises(ForkAfterCompensation, match="would reuse the outputs of 'reserve', whose"):
        sim.engine.fork("c1", "pay", "c1-from-pay")
    status, body = handle_request(sim.engine, "POST", "/executions/c1/fork",
                                  {"from_step": "ship", "id": "c1-b", "despite_compensation": True})
    assert status == 201 and body == {"id": "c1-b"}


def test_orbit_fork_says_which_steps_were_compensated_and_takes_a_confirming_flag(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from orbit.cli import main as orbit_cli
    from test_paged_reads import InProcessClient

    sim = compensated()
    monkeypatch.setattr(orbit_cli, "_client", lambda args: InProcessClient(sim.engine))
    assert orbit_cli.main(["fork", "c1", "--from-step", "ship", "--id", "c1-x"]) == 1
    err = capsys.readouterr().err
    assert "would reuse the outputs of 'reserve', 'pay', whose compensation ran" in err
    assert "Traceback" not in err
    confirmed = ["fork", "c1", "--from-step", "ship", "--id", "c1-x", "--despite-compensation"]
    assert orbit_cli.main(confirmed) == 0
    assert "c1-x forked from c1 at step ship" in capsys.readouterr().out
