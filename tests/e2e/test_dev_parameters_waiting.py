"""`orbit dev --parameter` (the HTTP step enabled on the long-running server) and `orbit history`
showing what a running execution waits for, both through the CLI as a user runs it."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import orbit_dev
from tests.e2e.http_servers import echo, serve

ROOT = Path(__file__).resolve().parents[2]

ALLOW_LOOPBACK = ["HttpTaskEnabled=true", "HttpAllowedHosts=127.0.0.1", "HttpPrivateHosts=127.0.0.1"]
# fails with a retryable error on every attempt, then waits an hour: a stable RETRY_WAIT
SLOW_RETRY = """\
orbit: 1
name: slow-retry
version: "1"
steps:
  fetch:
    task: flaky.fetch
    input: {resource: "res:1", fail_times: 9}
    retry: {max_attempts: 3, backoff: 1h}
"""


@pytest.fixture(scope="module")
def echo_url():
    received: list[dict] = []
    with serve(echo(received)) as url:
        yield f"{url}/echo", received


@pytest.fixture(scope="module")
def dev_url(tmp_path_factory):
    retry_file = tmp_path_factory.mktemp("defs") / "slow_retry.yaml"
    retry_file.write_text(SLOW_RETRY)
    args = ["examples/http_ping.yaml", "examples/order_fulfilment.yaml", str(retry_file)]
    args += ["--workers", "examples/workers/orders.py", "--workers", "examples/workers/misc.py"]
    args += [a for p in ALLOW_LOOPBACK for a in ("--parameter", p)]
    with orbit_dev(*args, stderr=subprocess.STDOUT) as (url, lines):
        # the banner says the stack runs with other than the template's defaults
        assert "template parameters: HttpAllowedHosts=127.0.0.1, HttpPrivateHosts=127.0.0.1, " in "".join(
            lines
        )
        yield url


def _describe_until(cli, url: str, eid: str, done, timeout_s: float = 30) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        res = cli("describe", eid, "--json", "--url", url)
        desc = json.loads(res.stdout) if res.returncode == 0 else {}
        if (desc and done(desc)) or time.monotonic() > deadline:
            return desc
        time.sleep(0.2)


def test_dev_with_the_http_task_enabled_runs_the_http_example(cli, dev_url, echo_url):
    url, received = echo_url
    res = cli("start", "http-ping", "--input", json.dumps({"url": url}), "--id", "dev-ping", "--url", dev_url)
    assert res.returncode == 0, res.stderr
    desc = _describe_until(cli, dev_url, "dev-ping", lambda d: d["status"] != "RUNNING")
    assert desc["status"] == "COMPLETED", desc
    assert desc["output"] == {"status": 200, "echoed": {"hello": "orbit", "id": "dev-ping"}}
    assert {"hello": "orbit", "id": "dev-ping"} in received


def test_history_ends_with_what_a_running_execution_waits_for(cli, dev_url):
    order = json.dumps({"order_id": "W-1", "total": 5, "card": "tok_visa", "items": [{"sku": "x", "qty": 1}]})
    assert (
        cli("start", "order-fulfilment", "--input", order, "--id", "w-sig", "--url", dev_url).returncode == 0
    )
    assert cli("start", "slow-retry", "--id", "w-retry", "--url", dev_url).returncode == 0
    waits = {"w-sig": "WAITING", "w-retry": "RETRY_WAIT"}
    for eid, status in waits.items():
        _describe_until(
            cli, dev_url, eid, lambda d, s=status: s in {st["status"] for st in d["steps"].values()}
        )

    text = cli("history", "w-sig", "--url", dev_url).stdout
    last = text.strip().splitlines()[-1]
    assert re.search(
        r"approval +1 +- +waiting: signal approval \(or its hook\) since \d{4}-\d\d-\d\d ", last
    ), text
    assert "gives up at" in last  # the wait's timeout, from the definition

    text = cli("history", "w-retry", "--url", dev_url).stdout
    assert "attempt failed  UPSTREAM_UNAVAILABLE" in text
    last = text.strip().splitlines()[-1]
    when = re.search(
        r"fetch +2 +- +waiting: retry \(attempt 2\) at (\S+ \S+) UTC after UPSTREAM_UNAVAILABLE$", last
    )
    assert when, text
    events = json.loads(cli("history", "w-retry", "--json", "--url", dev_url).stdout)
    retry = next(e for e in events if e["type"] == "RetryScheduled")  # --json: still the event list
    fire = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(retry["fire_at_ms"] / 1000))
    assert when.group(1) == fire and retry["delay_ms"] == 3_600_000


def test_dev_and_run_refuse_an_unknown_parameter_or_a_bad_value(cli):
    for command in (["dev"], ["run", "examples/http_ping.yaml"]):
        res = cli(*command, "--parameter", "HttpTaskEnable=true")
        assert res.returncode == 2, res.stdout
        assert (
            f"orbit {command[0]}: --parameter HttpTaskEnable=true: template.yaml has no parameter "
            "'HttpTaskEnable'; it has: AlarmActionArn, AppLayerArns, ArchiveDays, DeciderMemorySize, "
            "DeciderTimeout, DefaultWorkerMaxConcurrency, HttpAllowedHosts, HttpPrivateHosts, "
            "HttpTaskEnabled, HttpWorkerMaxConcurrency, InlineTaskModules, InlineTasksLayerArn, LogLevel, "
            "LogRetentionDays, QueueAgeAlarmSeconds, RetentionDays, TriggerQueueNamePrefix, WorkflowModules"
        ) in res.stderr
        res = cli(*command, "--parameter", "HttpTaskEnabled=yes", "--parameter", "LogRetentionDays=month")
        assert res.returncode == 2
        assert (
            "--parameter HttpTaskEnabled=yes: not accepted by HttpTaskEnabled; allowed values: true, false; "
            "--parameter LogRetentionDays=month: not accepted by LogRetentionDays; expected a number"
        ) in res.stderr
        assert "Orbit dev: API on" not in res.stdout  # refused before the local stack started


def test_run_of_an_execution_that_can_only_wait_says_what_it_waits_for(cli, tmp_path):
    stuck = tmp_path / "stuck.yaml"
    stuck.write_text(
        'orbit: 1\nname: stuck\nversion: "1"\nsignals: {go: {}}\nsteps:\n  hold: {wait_for: go}\n'
    )
    res = cli("run", str(stuck), "--mode", "inprocess", "--quiet")
    assert res.returncode == 1
    assert re.search(
        r"nothing more will happen on its own \(waiting: hold: signal go \(or its hook\) since ", res.stderr
    )


def test_history_text_of_a_parked_execution_says_why_and_json_stays_the_event_list(monkeypatch, capsys):
    from orbit.cli import main as orbit_cli

    events = [
        {"seq": 1, "timestamp_ms": 1_000, "type": "WorkflowCreated", "workflow": "wf", "version": "1"},
        {"seq": 2, "timestamp_ms": 1_000, "type": "WorkflowStarted"},
        {"seq": 3, "timestamp_ms": 3_000, "type": "StepScheduled", "step": "a", "attempt": 1, "queue": "q1"},
    ]
    parked = {"code": "BUILD_MISMATCH", "message": "build sha256:ab is not registered"}
    desc = {
        "id": "e1",
        "status": "RUNNING",
        "steps": {"a": {"status": "SCHEDULED", "attempt": 1}},
        "parked": parked,
    }

    class Stub:
        def describe(self, eid, **paging):
            return desc

        def history(self, eid, **paging):
            return events

    monkeypatch.setattr(orbit_cli, "_client", lambda args: Stub())
    assert orbit_cli.main(["history", "e1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert re.fullmatch(
        r" +2\.0s +a +1 +- +waiting: for a worker on queue q1 since 1970-01-01 00:00:03 UTC", lines[-2]
    )
    assert lines[-1] == f"parked: {json.dumps(parked)}"
    assert orbit_cli.main(["history", "e1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == events
