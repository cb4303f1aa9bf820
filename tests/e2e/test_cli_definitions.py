"""`orbit register`, `orbit workflows` and `orbit retire` against `orbit dev`, as a user runs them."""

from __future__ import annotations

import json
import time

from tests.e2e.conftest import orbit_cli, orbit_dev

GATE = "orbit: 1\nname: gate\nversion: \"{v}\"\nsteps:\n  w: {{wait_for: go}}\n"


def test_register_list_retire_and_a_running_execution_finishes(cli, tmp_path):
    for v in ("1", "2"):
        (tmp_path / f"gate{v}.yaml").write_text(GATE.format(v=v))
    (tmp_path / "broken.yaml").write_text("orbit: 1\nname: broken\nsteps:\n  a: {task: 5}\n")
    with orbit_dev() as (url, _):
        api = ("--url", url)
        res = cli("register", str(tmp_path / "gate1.yaml"), str(tmp_path / "broken.yaml"), *api)
        assert res.returncode == 1 and "broken.yaml" in res.stderr and "steps.a" in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
        assert "gate" not in cli("workflows", *api).stdout  # all or none: nothing was sent
        res = cli("register", str(tmp_path / "gate1.yaml"), str(tmp_path / "gate2.yaml"), *api)
        assert res.returncode == 0, res.stderr
        assert res.stdout.splitlines()[0].startswith(f"registered gate v1 from {tmp_path / 'gate1.yaml'} (")
        res = cli("start", "gate", "--version", "1", "--id", "g-1", *api)
        assert res.returncode == 0, res.stderr

        res = cli("retire", "gate@1", *api)
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() == "retired gate v1: new starts are refused; running executions finish"
        assert cli("workflows", *api).stdout.splitlines() == ["gate  definition  v1 (retired), v2"]
        listed = json.loads(cli("workflows", "--json", *api).stdout)
        assert [(v["version"], v["retired"]) for v in listed[0]["versions"]] == [("1", True), ("2", False)]

        res = cli("start", "gate", "--version", "1", *api)
        assert res.returncode == 1 and "Traceback" not in res.stderr
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "WORKFLOW_RETIRED" in lines[0] and "version 1 is retired" in lines[0]
        assert cli("start", "gate", "--id", "g-2", *api).returncode == 0  # v2, the latest, still starts

        assert cli("signal", "g-1", "go", *api).returncode == 0
        deadline = time.monotonic() + 30  # orbit dev's pump decides the signal
        while (desc := json.loads(cli("describe", "g-1", "--json", *api).stdout))["status"] == "RUNNING":
            assert time.monotonic() < deadline, desc
            time.sleep(0.2)
        assert desc["status"] == "COMPLETED" and desc["version"] == "1"

        res = cli("retire", "gate@", *api)
        assert res.returncode == 2 and "expected NAME or NAME@VERSION" in res.stderr
        res = cli("retire", "nope", *api)
        assert res.returncode == 1 and "cannot retire 'nope'" in res.stderr
        (tmp_path / "flow.py").write_text("import orbit\n")
        res = cli("register", str(tmp_path / "flow.py"), *api)
        assert res.returncode == 2 and "registered by the process that runs it" in res.stderr


def test_orbit_dev_names_each_task_no_worker_serves_at_start_up(tmp_path):
    flow = tmp_path / "flow.yaml"
    flow.write_text("orbit: 1\nname: flow\nsteps:\n  hi: {task: example.greet}\n"
                    "  pay: {task: billing.charge, after: [hi], compensate: {task: billing.refund}}\n")
    later = tmp_path / "later.yaml"
    later.write_text("orbit: 1\nname: later\nsteps:\n  x: {task: ship.send}\n")
    with orbit_dev(str(flow)) as (url, lines):
        said = [line.strip() for line in lines if "no worker serves" in line]
        assert orbit_cli("register", str(later), "--url", url).returncode == 0
        deadline = time.monotonic() + 10
        while not any("task ship.send (later: steps.x)" in line for line in lines):
            assert time.monotonic() < deadline, lines  # a definition registered later: said then
            time.sleep(0.1)
    assert said == [
        "no worker serves task billing.charge (flow: steps.pay): its steps wait in queue billing until one "
        "does (pass --workers FILE.py with @task('billing.charge'))",
        "no worker serves task billing.refund (flow: steps.pay.compensate): its steps wait in queue billing "
        "until one does (pass --workers FILE.py with @task('billing.refund'))",
    ]  # example.greet is served by the template's example worker
