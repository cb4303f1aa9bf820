"""`orbit replay`: golden histories pass, a known-incompatible change fails naming the first
divergence, and a file that is not a history is refused with a one-line error."""

from __future__ import annotations

import json
from pathlib import Path

GOLDEN = "tests/golden/code"
CODE = ("--workflows", "tests/golden/code/workflows.py", "--workflows", "examples/code/order_saga.py")


def test_replay_passes_on_the_golden_histories(cli, tmp_path):
    for name in ("tour", "saga_success", "saga_declined", "saga_cancelled"):
        (tmp_path / f"{name}.json").write_text((Path(GOLDEN) / f"{name}.json").read_text())
    res = cli("replay", "--file", str(tmp_path), *CODE)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count(": ok (") == 4 and "golden-tour v1, COMPLETED" in res.stdout
    res = cli("replay", "--file", "tests/golden/dsl/saga.json", "--workflows", str(tmp_path / "saga.yaml"))
    assert res.returncode == 1 and "not found" in res.stderr  # a missing --workflows file, said plainly


def test_replay_fails_at_the_first_divergence_and_prints_it(cli):
    res = cli("replay", "--file", f"{GOLDEN}/bad_saga_wrong_task.json", "--file", f"{GOLDEN}/tour.json",
              *CODE, "--json")
    assert res.returncode == 1
    assert "DIVERGED" in res.stdout and "durable call #3" in res.stdout
    assert "task(payments.authorize)" in res.stdout and "task(payments.charge)" in res.stdout
    assert "tour.json" not in res.stdout  # stopped at the first divergence
    details = json.loads(res.stdout[res.stdout.index("{"):])
    assert details["recorded"]["task"] == "payments.authorize"


def test_replay_of_a_definition_history(cli, tmp_path):
    body = json.loads(open("tests/golden/dsl/saga.json").read())
    (tmp_path / "saga.json").write_text(json.dumps(body["definition"]))
    (tmp_path / "h.json").write_text(json.dumps(body["history"]))
    ok = cli("replay", "--file", str(tmp_path / "h.json"), "--workflows", str(tmp_path / "saga.json"))
    assert ok.returncode == 0 and ": ok (" in ok.stdout, ok.stdout + ok.stderr
    body["definition"]["steps"]["audit"] = {"task": "audit.log", "after": ["reserve"]}
    (tmp_path / "saga.json").write_text(json.dumps(body["definition"]))
    bad = cli("replay", "--file", str(tmp_path / "h.json"), "--workflows", str(tmp_path / "saga.json"))
    assert bad.returncode == 1 and "asks for step 'audit'" in bad.stdout


def test_a_file_that_is_not_a_history_is_refused_in_one_line(cli, tmp_path):
    for text, expect in (("{}", "not a history"), ("oops", "not JSON"), ('[{"seq": 1}]', "event #1")):
        f = tmp_path / "h.json"
        f.write_text(text)
        res = cli("replay", "--file", str(f), *CODE)
        assert res.returncode == 1 and "Traceback" not in res.stderr
        assert expect in res.stderr and str(f) in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = cli("replay", *CODE)
    assert res.returncode == 1 and "give execution ids" in res.stderr
    res = cli("replay", "--file", f"{GOLDEN}/tour.json")
    assert res.returncode == 1 and "--workflows FILE is required" in res.stderr
    res = cli("replay", "--file", f"{GOLDEN}/tour.json", "--workflows", "examples/code/order_saga.py")
    assert res.returncode == 1 and "which no --workflows file has" in res.stderr
