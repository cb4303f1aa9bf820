"""`orbit replay`: golden histories pass, a known-incompatible change fails naming the first
divergence, and a file that is not a history is refused with a one-line error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

GOLDEN = "tests/golden/code"
CODE = ("--workflows", "tests/golden/code/workflows.py", "--workflows", "examples/code/order_saga.py")


def test_replay_passes_on_the_golden_histories(cli, tmp_path):
    for name in ("tour", "saga_success", "saga_declined", "saga_cancelled"):
        (tmp_path / f"{name}.json").write_text((Path(GOLDEN) / f"{name}.json").read_text())
    res = cli("replay", "--file", str(tmp_path), *CODE)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count(": ok (") == 4 and "golden-tour v1, COMPLETED" in res.stdout
    res = cli("replay", "--file", "tests/golden/dsl/saga.json", "--workflows", str(tmp_path / "saga.yaml"))
    assert res.returncode == 2 and "not found" in res.stderr  # a missing --workflows file, said plainly


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
        assert res.returncode == 2 and "Traceback" not in res.stderr
        assert expect in res.stderr and str(f) in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = cli("replay", *CODE)
    assert res.returncode == 2 and "give execution ids" in res.stderr
    res = cli("replay", "--file", f"{GOLDEN}/tour.json")
    assert res.returncode == 2 and "--workflows FILE is required" in res.stderr
    res = cli("replay", "--file", f"{GOLDEN}/tour.json", "--workflows", "examples/code/order_saga.py")
    assert res.returncode == 2 and "which no --workflows file has" in res.stderr


@pytest.fixture
def api():
    """The real API router over an in-memory engine, on loopback: one execution parked."""
    from orbit.core.history.events import TaskError
    from orbit.core.runtime.commands import Park
    from orbit.service.http import handle_request

    from tests.e2e.http_servers import Quiet, serve
    from tests.unit.dsl_harness import sim_with
    from tests.unit.test_engine_service import CodeLike, ScriptedRuntime

    sim = sim_with({"a": {"compute": "{% 1 %}"}})
    sim.start("wf", {}, id="done")
    sim.register(CodeLike("k", ScriptedRuntime([Park(TaskError("NON_DETERMINISM", "x", False))])))
    sim.start("k", {}, id="stuck")
    sim.run_until_idle()

    class Api(Quiet):
        def _answer(self):
            path, _, query = self.path.partition("?")
            status, body = handle_request(sim.engine, self.command, path, self.read_body() or None,
                                          dict(p.split("=", 1) for p in query.split("&") if "=" in p))
            self.reply(status, json.dumps(body).encode())

        do_GET = do_POST = _answer  # noqa: N815

    with serve(Api) as url:
        yield url, sim


def test_unpark_through_the_api(cli, api):
    url, sim = api
    res = cli("unpark", "stuck", "--url", url)
    assert res.returncode == 0 and "un-park requested for stuck" in res.stdout, res.stderr
    sim.run_until_idle()
    assert [e["type"] for e in sim.history("stuck")].count("ExecutionParked") == 2
    for eid, expect in (("done", "has already ended (COMPLETED)"), ("nobody", "HTTP 404")):
        res = cli("unpark", eid, "--url", url)
        assert res.returncode == 1 and expect in res.stderr and "Traceback" not in res.stderr


def test_replay_reads_histories_from_the_api(cli, api, tmp_path):
    url, sim = api
    (tmp_path / "wf.yaml").write_text(json.dumps({"orbit": 1, "name": "wf", "version": "1",
                                                  "steps": {"a": {"compute": "{% 1 %}"}}}))
    res = cli("replay", "done", "--url", url, "--workflows", str(tmp_path / "wf.yaml"))
    assert res.returncode == 0 and "done: ok (" in res.stdout, res.stdout + res.stderr


def test_pause_and_unpause_through_the_api(cli, api):
    url, sim = api
    res = cli("pause", "stuck", "--url", url, "--reason", "outage")
    assert res.returncode == 0 and "pause requested for stuck" in res.stdout, res.stderr
    sim.run_until_idle()
    assert sim.describe("stuck")["paused"]["reason"] == "outage"
    again = cli("pause", "stuck", "--url", url)
    assert again.returncode == 1 and "execution 'stuck' is already paused" in again.stderr
    assert "Traceback" not in again.stderr
    res = cli("unpause", "stuck", "--url", url)
    assert res.returncode == 0 and "unpause requested for stuck" in res.stdout, res.stderr
    sim.run_until_idle()
    assert sim.describe("stuck")["paused"] is None
    res = cli("unpause", "done", "--url", url)
    assert res.returncode == 1 and "has already ended (COMPLETED)" in res.stderr
