"""What a brand-new user met while trying every README and docs/cli.md step with wrong input (the
newuser pass): each message is one line on stderr that names what is wrong, never a traceback."""

from __future__ import annotations

from tests.e2e.test_cli_first_hour import one_clear_line
from tests.unit.cpu_time import child_cpu_seconds


def test_real_time_run_with_a_week_long_sleep_says_why_it_stops_at_once(cli):
    cpu_before = child_cpu_seconds()
    res = cli(
        "run", "examples/trial_reminder.yaml", "--input", '{"email": "a@b.c"}', "--workers",
        "examples/workers/misc.py", "--real-time", "--mode", "inprocess", "--quiet",
    )
    # Not 300 s of waiting for a timer 7 days away: the last line below is the one the stack
    # raises *instead of* sleeping (NothingDueInTime), and ", 7d from now" shows no time went by.
    # Busy-waiting would burn CPU: the run takes about 2 s of the child's CPU time (no wall clock).
    cpu = child_cpu_seconds() - cpu_before
    assert cpu < 60, f"the run took {cpu:.1f} s of CPU time"
    assert res.returncode == 1 and "Traceback" not in res.stdout + res.stderr
    assert "wait_a_week" in res.stdout and "waiting: timer until" in res.stdout
    last = res.stderr.splitlines()[-1]
    assert "cannot end within --timeout 300 s of wall time: nothing is due before " in last, last
    # The next thing due is the timers' hand-over to SQS, 15 minutes before the timer (timers on the
    # second, ORBIT_TIMER_LEAD_S): 6d23h45m, shown as 6d23h; 7d with the lead off.
    assert (", 6d23h from now" in last or ", 7d from now" in last) and "had not ended after" not in last


def test_input_nested_too_deeply_is_one_line(cli, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    res = cli("start", "order-fulfilment", "--input", f"@{deep}", "--url", "http://127.0.0.1:9")
    one_clear_line(res, 2, f"orbit start: --input: @{deep} nests arrays or objects too deeply to read")
    res = cli("run", "examples/trial_reminder.yaml", "--input", f"@{deep}")
    one_clear_line(res, 2, "orbit run: --input: @")


def test_a_port_out_of_range_is_bad_usage(cli):
    for command in ("dev", "ui"):
        for value in ("99999", "-1", "http"):
            res = cli(command, "--port", value)
            one_clear_line(res, 2, f"orbit {command}: argument --port: '{value}' is not a port; use 1-65535")


def test_a_body_over_the_api_limit_is_refused_before_sending(cli, tmp_path):
    from orbit.client import MAX_REQUEST_BYTES
    from orbit.service.http import MAX_BODY_BYTES

    assert MAX_REQUEST_BYTES == MAX_BODY_BYTES  # the client checks the API's own limit
    big = tmp_path / "big.json"
    big.write_text('{"blob": "' + "x" * (MAX_BODY_BYTES + 1) + '"}')
    # port 9 has no server: the message proves nothing was sent (not "cannot reach the Orbit API")
    res = cli("start", "order-fulfilment", "--input", f"@{big}", "--url", "http://127.0.0.1:9")
    one_clear_line(res, 1, "orbit start: POST /executions: the request body is 6,291,")
    assert res.stderr.strip().endswith("more than the 6,291,456 the Orbit API accepts; nothing was sent")


def test_simulate_refuses_more_runs_than_it_can_keep(cli):
    res = cli("simulate", "examples/order_fulfilment.yaml", "--runs", "100000000000")
    one_clear_line(res, 2, "orbit simulate: --runs 100000000000: at most 10000 in one call; run it again "
                   "with another --seed for more")


def test_start_wait_names_the_execution_before_waiting(monkeypatch, capsys):
    from orbit.cli import main as orbit_cli

    class Stub:  # started, then Ctrl-C while waiting for the end
        def start(self, name, inp, **kw):
            return {"id": "w-9", "status": "RUNNING"}

        def describe(self, eid, **paging):
            raise KeyboardInterrupt

    monkeypatch.setattr(orbit_cli, "_client", lambda args: Stub())
    assert orbit_cli.main(["start", "trial-reminder", "--wait"]) == 130
    captured = capsys.readouterr()
    assert captured.out == ""  # stdout keeps only results
    assert captured.err.startswith("started trial-reminder as w-9; waiting for its end (Ctrl-C stops waiting")


def test_make_demo_prints_only_the_timeline_and_output_on_stdout():
    """README: "Live progress and logs go to stderr, so `make demo > out.txt` keeps just this"."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    venv = Path(sys.executable).parent.parent  # this test's venv; STAMP= skips the install step
    res = subprocess.run(["make", "--no-print-directory", "demo", f"VENV={venv}", "STAMP="], cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stdout.splitlines() if line.strip()]
    assert lines[0].split() == ["at", "step", "try", "took", "outcome"], res.stdout  # not the recipe
    assert "status: COMPLETED" in res.stdout and "orbit run" not in res.stdout


def test_dev_names_a_missing_file_as_run_does(cli):
    for args, text in ((("nope.yaml",), "nope.yaml: file not found"),
                       (("examples",), "examples: file not found (it is a directory)"),
                       (("--register", "nope.yaml"), "--register nope.yaml: file not found"),
                       (("--workers", "nope.py"), "--workers nope.py: file not found")):
        res = cli("dev", *args, "--port", "0")
        one_clear_line(res, 2, f"orbit dev: {text}")


def test_validate_names_a_misspelled_function(cli, tmp_path):
    flow = tmp_path / "typo.yaml"
    flow.write_text('orbit: 1\nname: typo\nsteps:\n  a: {compute: "{% $sting(input.x) %}"}\n')
    res = cli("validate", str(flow))
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert f"{flow}: steps.a.compute: unknown function $sting in '$sting(input.x)'" in res.stdout + res.stderr


def test_every_schedule_action_argument_has_help_and_ids_read_id():
    """test_cli_first_hour checks each command's own arguments; this walks `orbit schedule ACTION` too."""
    import argparse

    from orbit.cli.main import build_parser

    def walk(parser, words):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, [*words, name])
            elif action.dest != "help":
                yield words, action

    for words, action in walk(build_parser(), ["orbit"]):
        where = f"{' '.join(words)} {action.option_strings or action.dest}"
        assert action.help, f"{where}: no help"
        if action.dest == "id" and not action.option_strings:
            assert action.metavar == "ID", f"{where}: shown as {action.metavar!r}, not ID"


def test_an_unusable_api_url_is_one_line_naming_where_it_came_from(cli):
    for url in ("http://[::1", "http://127.0.0.1:99999"):
        res = cli("list", "--url", url)
        one_clear_line(res, 1, f"orbit list: '{url}' is not an http(s) URL of an Orbit API")
    res = cli("list", env={"ORBIT_URL": "garbage"})
    one_clear_line(res, 1, "orbit list: 'garbage' ($ORBIT_URL) is not an http(s) URL of an Orbit API")
