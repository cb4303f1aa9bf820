"""The `orbit` CLI as a subprocess: `run` on an example, and the API commands against `orbit dev`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]

SIGNAL = 'approval={"approved": true, "by": "e2e"}'


def test_run_order_example_exits_0_with_the_expected_output(cli):
    res = cli(
        "run",
        "examples/order_fulfilment.yaml",
        "--input",
        "@examples/inputs/order.json",
        "--workers",
        "examples/workers/orders.py",
        "--signal",
        SIGNAL,
        "--json",
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["execution"]["status"] == "COMPLETED"
    assert out["execution"]["output"]["order"] == "A-1001"
    assert out["execution"]["output"]["shipments"] == ["TRK-A-1001-0", "TRK-A-1001-1", "TRK-A-1001-2"]
    assert out["history"][-1]["type"] == "WorkflowCompleted"
    assert "reserve" in res.stderr and "COMPLETED" in res.stderr  # live progress went to stderr


def test_run_prints_a_timeline_and_fails_with_non_zero_when_the_execution_fails(cli):
    res = cli(
        "run",
        "examples/order_fulfilment.yaml",
        "--input",
        "@examples/inputs/order_declined.json",
        "--workers",
        "examples/workers/orders.py",
        "--signal",
        SIGNAL,
        "--mode",
        "inprocess",
    )
    assert res.returncode == 1, res.stderr
    assert "compensate:reserve" in res.stdout and "CARD_DECLINED" in res.stdout
    assert "status: FAILED" in res.stdout


def test_run_reports_a_bad_input_flag(cli):
    res = cli("run", "examples/order_fulfilment.yaml", "--input", "{not json")
    assert res.returncode == 2 and "--input" in res.stderr and "not valid JSON" in res.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def dev_server():
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "orbit.cli.main",
            "dev",
            "examples/order_fulfilment.yaml",
            "examples/trial_reminder.yaml",
            "--workers",
            "examples/workers/orders.py",
            "--workers",
            "examples/workers/misc.py",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        line = ""
        deadline = time.monotonic() + 60
        while url not in line:
            assert time.monotonic() < deadline and proc.poll() is None, f"orbit dev did not start: {line}"
            line = proc.stdout.readline()
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _wait_status(cli, url: str, eid: str, wanted: str, timeout_s: float = 30) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        desc = json.loads(cli("describe", eid, "--json", "--url", url).stdout)
        if desc["status"] == wanted or time.monotonic() > deadline:
            return desc
        time.sleep(0.2)


def test_api_commands_against_orbit_dev(cli, dev_server):
    url = dev_server
    order = json.dumps({"order_id": "D-1", "total": 5, "card": "tok_visa", "items": [{"sku": "x", "qty": 1}]})
    res = cli("start", "order-fulfilment", "--input", order, "--id", "dev-order-1", "--url", url)
    assert (res.returncode, res.stdout.strip()) == (0, "dev-order-1"), res.stderr
    # waits for approval; a payload breaking the signal's schema is refused with a clear error
    bad = cli("signal", "dev-order-1", "approval", "--payload", '{"approved": "maybe"}', "--url", url)
    assert bad.returncode == 1 and "PAYLOAD_REFUSED" in bad.stderr
    ok = cli("signal", "dev-order-1", "approval", "--payload", '{"approved": true}', "--url", url)
    assert ok.returncode == 0, ok.stderr
    desc = _wait_status(cli, url, "dev-order-1", "COMPLETED")
    assert desc["status"] == "COMPLETED" and desc["output"]["shipments"] == ["TRK-D-1-0"]

    text = cli("describe", "dev-order-1", "--url", url).stdout
    assert "COMPLETED" in text and "ship[0]" in text
    hist = cli("history", "dev-order-1", "--url", url)
    assert "execution" in hist.stdout and "COMPLETED" in hist.stdout
    events = json.loads(cli("history", "dev-order-1", "--json", "--url", url).stdout)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "WorkflowCompleted"

    # cancel a second execution while it sleeps
    env = {"ORBIT_URL": url}
    assert (
        cli(
            "start", "trial-reminder", "--input", '{"email": "c@d.e"}', "--id", "dev-sleep", env=env
        ).returncode
        == 0
    )
    _wait_status(cli, url, "dev-sleep", "RUNNING")
    assert cli("cancel", "dev-sleep", "--reason", "user left", env=env).returncode == 0
    assert _wait_status(cli, url, "dev-sleep", "CANCELLED")["status"] == "CANCELLED"

    listed = json.loads(cli("list", "--json", env=env).stdout)
    assert {"dev-order-1", "dev-sleep"} <= {e["execution_id"] for e in listed["executions"]}
    missing = cli("describe", "no-such-execution", env=env)
    assert missing.returncode == 1 and "404" in missing.stderr


def test_api_commands_say_when_orbit_dev_is_not_running(cli):
    res = cli("describe", "x", "--url", f"http://127.0.0.1:{_free_port()}")
    assert res.returncode == 1 and "is `orbit dev` running?" in res.stderr


def test_run_a_code_workflow_file(cli):
    res = cli("run", "examples/code/order_saga.py", "--workers", "examples/workers/orders.py",
              "--input", "@examples/inputs/order.json", "--signal", SIGNAL, "--mode", "inprocess", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["execution"]["workflow"] == "order-fulfilment-code"
    assert out["execution"]["output"]["shipments"] == ["TRK-A-1001-0", "TRK-A-1001-1", "TRK-A-1001-2"]
