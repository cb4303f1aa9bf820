"""`orbit validate` as a subprocess: every problem with its path, exit codes."""

from __future__ import annotations

import json


def test_broken_definition_reports_every_problem_with_its_path(cli):
    res = cli("validate", "tests/e2e/fixtures/broken.yaml")
    assert res.returncode == 1
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("tests/e2e/fixtures/broken.yaml: steps.")]
    paths = sorted(ln.split(": ")[1] for ln in lines)
    assert paths == ["steps.charge.retry.max_attempts", "steps.ship.after[0]", "steps.wait.sleep"], res.stderr
    assert "3 problem(s)" in res.stderr


def test_valid_examples_pass(cli):
    for name in (
        "order_fulfilment",
        "order_with_invoice",
        "invoicing",
        "trial_reminder",
        "flaky_fetch",
        "http_ping",
    ):
        res = cli("validate", f"examples/{name}.yaml")
        assert (res.returncode, res.stdout.strip()) == (0, f"examples/{name}.yaml: valid"), res.stderr


def test_json_output_and_missing_file(cli):
    res = cli("validate", "--json", "tests/e2e/fixtures/broken.yaml")
    assert res.returncode == 1
    body = json.loads(res.stdout)
    assert body["valid"] is False and len(body["problems"]) == 3
    missing = cli("validate", "nope.yaml")
    assert missing.returncode == 2 and "nope.yaml: file not found" in missing.stderr


def test_run_refuses_a_broken_definition_listing_every_problem(cli):
    res = cli("run", "tests/e2e/fixtures/broken.yaml")
    assert res.returncode == 1
    lines = res.stderr.splitlines()
    assert lines[0] == "orbit run: 3 problem(s):"
    assert [ln.split(": ")[1] for ln in lines[1:]] == [
        "steps.charge.retry.max_attempts",
        "steps.ship.after[0]",
        "steps.wait.sleep",
    ]
