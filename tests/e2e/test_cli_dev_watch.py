"""`orbit dev` with the commands that watch it or move its clock (issue 11): start's exit code and
--wait, `orbit advance`, history --follow and --raw, UTC times in describe and list, and the one
line `orbit dev` prints per execution start and end. Each runs the CLI as a subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import orbit_dev

ROOT = Path(__file__).resolve().parents[2]
UTC = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ"


@pytest.fixture(scope="module")
def dev():
    """`orbit dev` on a free port; yields (url, lines it printed on stdout so far)."""
    with orbit_dev("examples/trial_reminder.yaml", "examples/flaky_fetch.yaml",
                   "--workers", "examples/workers/misc.py") as (url, lines):
        yield url, lines


def wait_line(lines: list[str], pattern: str, timeout_s: float = 30) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for line in list(lines):
            if re.search(pattern, line):
                return line
        time.sleep(0.1)
    raise AssertionError(f"no line matching {pattern!r} in {lines}")


def test_start_exits_1_when_the_input_breaks_the_contract(cli, dev):
    url, lines = dev
    res = cli("start", "flaky-fetch", "--input", '{"nothing": 1}', "--id", "bad-input", "--url", url)
    assert res.returncode == 1
    assert res.stdout.strip() == "bad-input"  # the id is the result; the failure is the one stderr line
    assert res.stderr.strip().startswith(
        "orbit start: execution bad-input is FAILED  INPUT_CONTRACT_VIOLATION"
    )
    assert "Traceback" not in res.stderr
    wait_line(lines, r"^ended   flaky-fetch bad-input: FAILED after .*INPUT_CONTRACT_VIOLATION")


def test_start_wait_waits_for_the_end_and_dev_prints_start_and_end(cli, dev):
    url, lines = dev
    res = cli(
        "start",
        "flaky-fetch",
        "--input",
        '{"resource": "res:9", "fail_times": 1}',
        "--id",
        "w-1",
        "--wait",
        "--url",
        url,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0] == "w-1"
    assert '"resource": "res:9"' in res.stdout and '"attempts": 2' in res.stdout
    assert wait_line(lines, r"^started flaky-fetch w-1$")
    assert wait_line(lines, r"^ended   flaky-fetch w-1: COMPLETED after \d")
    failed = cli("start", "flaky-fetch", "--input", '{"resource": "nope"}', "--wait", "--url", url, "--json")
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["status"] == "FAILED"  # --json: one document, the describe
    assert "BAD_RESOURCE" in failed.stderr


def test_advance_moves_the_dev_clock_and_follow_prints_until_the_end(cli, dev):
    url, lines = dev
    res = cli("start", "trial-reminder", "--input", '{"email": "a@b.c"}', "--id", "trial-1", "--url", url)
    assert res.returncode == 0, res.stderr
    follow = subprocess.Popen(
        [sys.executable, "-m", "orbit.cli", "history", "trial-1", "--follow", "--url", url],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(2)  # the welcome email goes out; the 7-day sleep starts
        assert follow.poll() is None  # still following: the execution waits
        moved = cli("advance", "7d1m", "--url", url)
        assert moved.returncode == 0, moved.stderr
        assert re.fullmatch(
            rf"orbit dev's clock moved on by 7d1m: now {UTC} \(virtual\)", moved.stdout.strip()
        )
        out, err = follow.communicate(timeout=60)
    finally:
        follow.kill()
    assert follow.returncode == 0, err
    assert "welcome" in out and "slept" in out and "COMPLETED" in out
    assert out.splitlines()[0].split() == ["at", "step", "try", "took", "outcome"]
    wait_line(lines, r"^ended   trial-reminder trial-1: COMPLETED after 7d")
    bad = cli("advance", "7", "--url", url)
    assert bad.returncode == 2 and "has no unit" in bad.stderr and "Traceback" not in bad.stderr


def test_describe_list_and_raw_history_show_utc_times(cli, dev):
    url, _ = dev
    res = cli(
        "start",
        "flaky-fetch",
        "--input",
        '{"resource": "res:1", "fail_times": 0}',
        "--id",
        "times-1",
        "--wait",
        "--url",
        url,
    )
    assert res.returncode == 0, res.stderr
    desc = cli("describe", "times-1", "--url", url).stdout
    assert re.search(rf"^created: {UTC}   ended: {UTC}$", desc, re.M), desc
    listed = cli("list", "--url", url).stdout
    assert re.search(rf"^times-1  flaky-fetch v1  COMPLETED\s+created {UTC}  ended {UTC}$", listed, re.M), (
        listed
    )
    raw = cli("history", "times-1", "--raw", "--url", url).stdout.splitlines()
    assert re.match(r"^\s+1  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z\s+WorkflowCreated ", raw[0]), raw[0]
    long_line = max(raw, key=len)
    assert len(long_line) > 160 and not long_line.endswith("…")  # piped: nothing cut


def test_advance_against_something_that_is_not_orbit_dev_is_one_line(cli):
    res = cli("advance", "1h", "--url", "http://127.0.0.1:9")
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "is `orbit dev` running?" in res.stderr
