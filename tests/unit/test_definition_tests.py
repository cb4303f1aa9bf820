"""`orbit test`: test files for definitions (docs/testing-definitions.md)."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from orbit.cli.main import main
from orbit.testing.spec import TestFileError, load_suite
from orbit.testing.spec_report import run_paths

ROOT = Path(__file__).resolve().parents[2]
SAGA = ROOT / "examples" / "order_fulfilment.yaml"
SAGA_TESTS = ROOT / "examples" / "order_fulfilment.test.yaml"


def saga_suite(tmp_path: Path, tests: dict, **extra) -> Path:
    """A test file beside a copy of the order saga."""
    shutil.copy(SAGA, tmp_path / "order_fulfilment.yaml")
    doc = {"definition": "order_fulfilment.yaml", "tests": tests, **extra}
    path = tmp_path / "saga.test.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(TestFileError) as err:
        load_suite(path)
    return [str(p) for p in err.value.problems]


def saga_defaults() -> dict:
    return yaml.safe_load(SAGA_TESTS.read_text())["defaults"]


def test_the_order_saga_examples_pass(capsys):
    assert main(["test", str(ROOT / "examples")]) == 0
    out = capsys.readouterr().out
    for name in ("success", "declined_card", "approval_by_signal", "approval_by_hook", "approval_times_out",
                 "flaky_warehouse"):
        assert f"order_fulfilment.test.yaml::{name} PASSED" in out
    assert "failed" not in out and "error" not in out
    assert "order_changes.test.yaml::changes_while_the_window_is_open PASSED" in out  # on_signal handlers


def test_a_broken_expectation_fails_naming_the_step_with_a_diff(tmp_path, capsys):
    doc = yaml.safe_load(SAGA_TESTS.read_text())
    doc["tests"]["flaky_warehouse"]["expect"]["steps"]["reserve"]["attempts"] = 2  # it takes 3
    doc["definition"] = str(SAGA)
    path = tmp_path / "broken.test.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    junit = tmp_path / "report.xml"
    assert main(["test", str(path), "--junit", str(junit)]) == 1
    out = capsys.readouterr().out
    assert "broken.test.yaml::flaky_warehouse FAILED" in out
    assert "broken.test.yaml::success PASSED" in out
    assert "expect.steps.reserve.attempts: step reserve: expected (-) differs from actual (+)" in out
    assert "  - 2\n  + 3" in out
    assert "1 failed, 7 passed" in out
    report = ET.parse(junit).getroot()
    assert report.get("tests") == "8" and report.get("failures") == "1"
    failure = report.find(".//testcase[@name='flaky_warehouse']/failure")
    assert failure is not None and "expect.steps.reserve.attempts" in failure.get("message")
    assert report.find(".//testcase[@name='success']/failure") is None


def test_output_diff_shows_the_lines_that_differ(tmp_path, capsys):
    path = saga_suite(tmp_path, {"t": {"timeline": [{"signal": "approval", "payload": {"approved": True}}],
                                       "expect": {"output_includes": {"charge": "ch-9"}}}},
                      defaults=saga_defaults())
    assert main(["test", str(path)]) == 1
    out = capsys.readouterr().out
    assert 'expect.output_includes: the actual value (+) does not include the expected one (-)' in out
    assert '-  "charge": "ch-9"' in out and '+  "charge": "ch-1"' in out


def test_a_mock_for_a_task_the_workflow_never_calls_is_refused(tmp_path):
    path = saga_suite(tmp_path, {"t": {"mocks": {"payments.chrge": [{"output": {}}]}}})
    [problem] = problems(path)
    assert problem.startswith("tests.t.mocks.payments.chrge: the workflow never calls task 'payments.chrge' "
                              "(did you mean 'payments.charge'?)")


def test_a_mock_output_breaking_the_task_output_schema_is_refused(tmp_path):
    path = saga_suite(tmp_path, {"t": {"mocks": {"payments.charge": [{"output": {"amount": 1}}]}}})
    [problem] = problems(path)
    assert problem.startswith("tests.t.mocks.payments.charge[0].output: breaks tasks.payments.charge.output: "
                              "output.charge_id")


def test_an_expectation_on_a_missing_step_is_refused_with_its_path(tmp_path):
    path = saga_suite(tmp_path, {"t": {"expect": {"steps": {"chrage": {"status": "FAILED"}},
                                                  "compensation": ["ship", "nope"]}}})
    found = problems(path)
    assert any(p.startswith("tests.t.expect.steps.chrage: no step named 'chrage' in order-fulfilment "
                            "(did you mean 'charge'?)") for p in found), found
    assert any(p.startswith("tests.t.expect.compensation[0]: step 'ship' has no `compensate`") for p in found)
    assert any(p.startswith("tests.t.expect.compensation[1]: no step named 'nope'") for p in found)


def test_bad_timelines_and_behaviours_are_refused(tmp_path):
    path = saga_suite(tmp_path, {"t": {
        "mocks": {"shipping.ship": [{"output": {"tracking": "x"}, "timeout": True},
                                    {"crash": True, "times": 0}]},
        "timeline": [{"at": "2h", "signal": "approval", "payload": {"approved": True}},
                     {"at": "1h", "signal": "aproval"},
                     {"at": "3h", "hook": "approval", "payload": {"approved": "yes"}}],
    }})
    found = "\n".join(problems(path))
    assert "tests.t.mocks.shipping.ship[0]: needs exactly one of output, error, timeout, crash, found 2" \
        in found
    assert "tests.t.mocks.shipping.ship[1].times: must be a whole number from 1 to 10000, not 0" in found
    assert "tests.t.timeline[1].at: 1h is before the time the timeline already reached" in found
    assert "tests.t.timeline[1].signal: order-fulfilment accepts no signal 'aproval'" in found
    assert "tests.t.timeline[2].payload: breaks signals.approval.schema: payload.approved" in found


def test_a_test_file_error_is_one_line_per_problem_without_a_traceback(tmp_path, capsys):
    path = saga_suite(tmp_path, {"t": {"expect": {"steps": {"nope": {}}}}})
    assert main(["test", str(path)]) == 1
    out = capsys.readouterr().out
    assert "ERROR loading" in out and "tests.t.expect.steps.nope: no step named 'nope'" in out
    assert "Traceback" not in out
    assert main(["test", str(tmp_path / "missing")]) == 2
    assert "orbit test: " in capsys.readouterr().err


def test_calls_past_the_last_counted_behaviour_and_unmocked_tasks_fail_the_test(tmp_path):
    defaults = saga_defaults()
    del defaults["mocks"]["shipping.ship"]
    path = saga_suite(tmp_path, {"t": {
        "mocks": {"payments.charge": [{"error": {"code": "BUSY"}, "times": 1}]},
        "timeline": [{"signal": "approval", "payload": {"approved": True}}]}}, defaults=defaults)
    [result] = run_paths([str(path)]).results
    text = "\n".join(m.message for m in result.mismatches)
    assert "called 4 times, but its behaviours answer 1" in text  # max_attempts 4; the extra calls hang
    path = saga_suite(tmp_path, {"t": {"timeline": [{"signal": "approval", "payload": {"approved": True}}]}},
                      defaults=defaults)
    [result] = run_paths([str(path)]).results
    assert not result.passed
    assert result.mismatches[0].path == "mocks.shipping.ship"
    message = result.mismatches[0].message
    assert "step ship[0] called task shipping.ship, which this test does not mock" in message


def test_a_seven_day_wait_costs_no_wall_time(tmp_path):
    week = {"orbit": 1, "name": "weekly", "steps": {"nap": {"sleep": "7d"}, "then": {"after": ["nap"],
            "task": "mail.send"}}, "output": "{% steps.then.output %}"}
    (tmp_path / "weekly.yaml").write_text(yaml.safe_dump(week))
    (tmp_path / "weekly.test.yaml").write_text(yaml.safe_dump({"definition": "weekly.yaml", "tests": {
        "sleeps": {"mocks": {"mail.send": [{"output": {"sent": True}}]},
                   "expect": {"status": "COMPLETED", "output": {"sent": True},
                              "events": ["TimerStarted", "TimerFired",
                                         {"type": "StepSucceeded", "step": "then"}]}},
    }}))
    report = run_paths([str(tmp_path)])
    assert report.ok, [m.lines() for r in report.results for m in r.mismatches]
    assert report.seconds < 5


def test_a_templated_output_breaking_the_schema_fails_the_test_naming_the_mock(tmp_path):
    path = saga_suite(tmp_path, {"t": {
        "mocks": {"shipping.ship": [{"output": {"tracking": "{% input.qty %}"}}]},  # a number, not a string
        "timeline": [{"signal": "approval", "payload": {"approved": True}}]}}, defaults=saga_defaults())
    [result] = run_paths([str(path)]).results
    assert not result.passed and result.status == "FAILED"
    first = result.mismatches[0]
    assert first.path == "mocks.shipping.ship[0].output"
    assert "step ship[0]: the output breaks the task's output schema: output.tracking" in first.message


def test_http_steps_are_mocked_as_the_task_orbit_http(tmp_path):
    ping = {"orbit": 1, "name": "ping", "steps": {"get": {"http": {"method": "GET", "url": "https://x.test/"}}},
            "output": "{% steps.get.output.status %}"}
    (tmp_path / "ping.yaml").write_text(yaml.safe_dump(ping))
    (tmp_path / "ping.test.yaml").write_text(yaml.safe_dump({"definition": "ping.yaml", "tests": {
        "ok": {"mocks": {"orbit.http": [{"output": {"status": 204, "headers": {}, "body": None}}]},
               "expect": {"status": "COMPLETED", "output": 204}}}}))
    report = run_paths([str(tmp_path)])
    assert report.ok, [m.lines() for r in report.results for m in r.mismatches]


def test_child_workflows_run_when_registered_and_their_tasks_can_be_mocked(tmp_path):
    for name in ("order_with_invoice.yaml", "invoicing.yaml"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    test = {"input": {"order_id": "o-1", "amount": 12},
            "mocks": {"billing.draft_invoice": [{"output": {"invoice_id": "inv-1", "total": 12}}],
                      "notify.email": [{"output": {}}]},
            "expect": {"status": "COMPLETED", "output": {"order": "o-1", "invoice": {"invoice_id": "inv-1",
                                                                                     "total": 12}}}}
    (tmp_path / "o.test.yaml").write_text(yaml.safe_dump({
        "definition": "order_with_invoice.yaml", "register": ["invoicing.yaml"], "tests": {"t": test}}))
    report = run_paths([str(tmp_path / "o.test.yaml")])
    assert report.ok, [m.lines() for r in report.results for m in r.mismatches] + report.errors
    (tmp_path / "bad.test.yaml").write_text(yaml.safe_dump({
        "definition": "order_with_invoice.yaml", "register": ["nope.yaml"], "tests": {"t": test}}))
    found = problems(tmp_path / "bad.test.yaml")
    assert any(p.startswith("register[0]: ") and p.endswith("nope.yaml: file not found")
               for p in found), found
    assert any(p.startswith("tests.t.mocks.billing.draft_invoice: the workflow never calls") for p in found)


def test_a_step_the_engine_refuses_for_its_task_input_contract_fails_the_test_unless_expected(tmp_path):
    pay = {"orbit": 1, "name": "pay", "steps": {"charge": {"task": "pay.charge",
                                                           "input": {"amount": "{% input.amount %}"}}},
           "tasks": {"pay.charge": {"input": {"type": "object",
                                              "properties": {"amount": {"type": "number"}}}}}}
    (tmp_path / "pay.yaml").write_text(yaml.safe_dump(pay))
    mocks = {"pay.charge": [{"output": {}}]}
    (tmp_path / "pay.test.yaml").write_text(yaml.safe_dump({"definition": "pay.yaml", "tests": {
        "unexpected": {"input": {"amount": "ten"}, "mocks": mocks, "expect": {"status": "FAILED"}},
        "expected": {"input": {"amount": "ten"}, "mocks": mocks,
                     "expect": {"status": "FAILED", "error": {"code": "INPUT_CONTRACT_VIOLATION"}}},
    }}))
    results = {r.case.name: r for r in run_paths([str(tmp_path)]).results}
    assert results["expected"].passed
    [problem] = results["unexpected"].mismatches
    assert problem.path == "steps.charge"
    assert problem.message.startswith(
        "would send task pay.charge an input that breaks tasks.pay.charge.input: "
        "task 'pay.charge' at step 'charge': input.amount: \"ten\" is not of type")
