"""The first hour with the `orbit` CLI (issue 11), each check as a user meets it: a subprocess,
stdout, stderr and the exit code read separately, and never a traceback without --verbose."""

from __future__ import annotations

import json
import time

import pytest

SLEEPY = "orbit: 1\nname: sleepy\nsteps:\n  nap: {sleep: 4s}\n"
DOUBLER = """\
orbit: 1
name: doubler
steps:
  each: {for: "{% input.items %}", task: notify.email, input: {to: "{% item %}"}}
"""
FAILING_WORKERS = """\
import orbit
from orbit.worker import task


@task("flaky.fetch")
def my_fetch(input, ctx):
    raise orbit.TaskError("UPSTREAM_DOWN", "the upstream said: " + "no " * 60, retryable=False)


@task("boom.task")
def exploding(input, ctx):
    raise RuntimeError("boom in user code")
"""
MISC = ("--workers", "examples/workers/misc.py")
BOOM = "orbit: 1\nname: boom\nsteps:\n  go: {task: boom.task, retry: {max_attempts: 2, backoff: 1s}}\n"


def no_env_region() -> dict[str, str]:
    # empty values count as unset for botocore (the cli fixture merges over os.environ)
    return {"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_CONFIG_FILE": "/nonexistent"}


def one_clear_line(res, code: int, text: str) -> None:
    """The exit code, one non-empty line on stderr containing `text`, and no traceback anywhere."""
    assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stdout + res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and text in lines[0], res.stderr


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("first_hour")
    (d / "sleepy.yaml").write_text(SLEEPY)
    (d / "doubler.yaml").write_text(DOUBLER)
    (d / "boom.yaml").write_text(BOOM)
    (d / "failing_workers.py").write_text(FAILING_WORKERS)
    (d / "syntax_workers.py").write_text("from orbit.worker import task\n\ndef broken(:\n    pass\n")
    (d / "import_workers.py").write_text("import orbit\nimport no_such_module_here\n")
    (d / "strings.yaml").write_text(
        'orbit: 1\nname: strings\nsteps:\n  each: {for: "{% input.name %}", compute: "{% item %}"}\n'
    )
    return d


# ---------------------------------------------------------------------- bad input: one line, no traceback
def test_a_workers_file_with_a_syntax_error_is_named_with_its_line(cli, files):
    res = cli("run", "examples/flaky_fetch.yaml", "--workers", str(files / "syntax_workers.py"))
    one_clear_line(res, 1, f"orbit run: --workers {files / 'syntax_workers.py'}:3: SyntaxError")


def test_a_workers_file_that_fails_to_import_is_named_with_its_line(cli, files):
    res = cli("run", "examples/flaky_fetch.yaml", "--workers", str(files / "import_workers.py"))
    one_clear_line(res, 1, f"{files / 'import_workers.py'}:2: importing it raised ModuleNotFoundError")


def test_a_missing_file_reads_the_same_in_run_and_validate(cli):
    for args in (("run", "missing_flow.py"), ("run", "missing_flow.yaml"), ("validate", "missing_flow.yaml")):
        res = cli(*args)
        one_clear_line(res, 2, f"orbit {args[0]}: {args[1]}: file not found")
        assert "--workers" not in res.stderr
    res = cli("run", "examples/flaky_fetch.yaml", "--workers", "missing_workers.py")
    one_clear_line(res, 2, "orbit run: --workers missing_workers.py: file not found")


def test_stack_without_a_region_says_how_to_set_one(cli):
    res = cli("describe", "x", "--stack", "orbit", env=no_env_region())
    one_clear_line(res, 1, "--stack orbit: no AWS region is set; pass --region REGION or set AWS_REGION")


def test_timeout_prints_the_timeline_so_far_and_one_line(cli, files):
    res = cli(
        "run", str(files / "sleepy.yaml"), "--real-time", "--timeout", "1", "--mode", "inprocess", "--quiet"
    )
    assert "waiting: timer until" in res.stdout  # the partial timeline, on stdout
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines[0].startswith("started sleepy as ")
    assert res.returncode == 1 and "Traceback" not in res.stdout + res.stderr
    # the 4 s sleep cannot end within 1 s: said at once, with when it would (not "after 1 s")
    assert "cannot end within --timeout 1 s of wall time: nothing is due before " in lines[-1]
    assert len(lines) == 2


def test_bad_usage_exits_2_with_one_line(cli, files):
    one_clear_line(cli(), 2, "orbit: the following arguments are required: COMMAND")
    one_clear_line(cli("run", "examples/flaky_fetch.yaml", "--timeout", "0"), 2, "--timeout 0: must be")
    one_clear_line(
        cli("run", "examples/flaky_fetch.yaml", "--input", "{x"), 2, "--input: the value is not valid JSON"
    )
    res = cli("run", "examples/order_fulfilment.yaml", "--signal", "approval={bad")
    # the hint shows syntax the flag accepts: NAME=JSON in one argument
    one_clear_line(res, 2, """quote it, e.g. --signal 'approval={"approved": true}'""")


def test_run_refuses_unknown_signals_and_unserved_tasks_before_starting(cli):
    res = cli(
        "run",
        "examples/order_fulfilment.yaml",
        "--input",
        "@examples/inputs/order.json",
        "--workers",
        "examples/workers/orders.py",
        "--signal",
        "aproval={}",
    )
    one_clear_line(
        res, 2, "--signal aproval: order-fulfilment has no signal named 'aproval'; it accepts: approval"
    )
    res = cli(
        "run",
        "examples/order_fulfilment.yaml",
        "--input",
        "@examples/inputs/order.json",
        "--mode",
        "inprocess",
    )
    one_clear_line(res, 2, "no worker serves inventory.release (order-fulfilment: steps.reserve.compensate)")
    assert "started" not in res.stderr  # nothing ran


def test_version(cli):
    res = cli("--version")
    assert res.returncode == 0 and res.stdout.startswith("orbit ") and res.stderr == ""


def test_an_unexpected_error_is_one_line_and_verbose_shows_the_traceback(cli, files):
    # a workers module that breaks the local stack itself: an error no check foresaw
    saboteur = files / "saboteur.py"
    saboteur.write_text(
        "from orbit.local import LocalStack\n\n"
        "def broken(self, *a, **k):\n    return 1 / 0\n\nLocalStack.start = broken\n"
    )
    args = (
        "run",
        "examples/trial_reminder.yaml",
        "--workers",
        "examples/workers/misc.py",
        "--workers",
        str(saboteur),
        "--mode",
        "inprocess",
    )
    one_clear_line(
        cli(*args),
        1,
        "orbit run: unexpected ZeroDivisionError: division by zero; run again with --verbose to see where",
    )
    verbose = cli(*args, "--verbose")
    assert verbose.returncode == 1 and "Traceback" in verbose.stderr and "1 / 0" in verbose.stderr


# ---------------------------------------------------------------------- output for scripts and people
def test_json_is_one_document_while_workers_fail_and_their_logs_go_to_stderr(cli, files):
    res = cli(
        "run",
        str(files / "boom.yaml"),
        "--workers",
        str(files / "failing_workers.py"),
        "--mode",
        "inprocess",
        "--json",
    )
    assert res.returncode == 1, res.stderr
    doc = json.loads(res.stdout)  # exactly one JSON document: the worker's log lines are not in it
    assert doc["execution"]["status"] == "FAILED"
    assert doc["execution"]["error"]["code"] == "TASK_FAILED"
    assert "raised in exploding (" in res.stderr and "failing_workers.py:" in res.stderr
    assert "boom in user code" in res.stderr


def test_real_time_waits_for_the_sleep(cli, files):
    t0 = time.monotonic()
    res = cli("run", str(files / "sleepy.yaml"), "--real-time", "--mode", "inprocess", "--quiet")
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - t0 >= 4.0
    assert "status: COMPLETED" in res.stdout


def test_a_fan_out_is_one_row_and_expand_shows_every_element(cli, files):
    items = json.dumps({"items": list(range(200))})
    res = cli("run", str(files / "doubler.yaml"), "--input", items, "--mode", "inprocess", *MISC)
    assert res.returncode == 0, res.stderr
    out = res.stdout.splitlines()
    assert len(out) < 15, res.stdout
    row = next(line for line in out if "each[0..199]" in line)
    assert "200 elements: 200 succeeded" in row and "p50" in row and "p99" in row
    assert len(res.stderr.splitlines()) < 20, res.stderr  # progress: one line per change of counts
    assert any(line.startswith("output: ") and "(200 items" not in line for line in out)
    full = cli(
        "run",
        str(files / "doubler.yaml"),
        "--input",
        items,
        "--mode",
        "inprocess",
        "--expand",
        "--quiet",
        *MISC,
    )
    assert sum("each[" in line for line in full.stdout.splitlines()) == 200


def test_text_fits_the_width_and_ends_with_an_ellipsis(cli, files):
    res = cli(
        "run",
        "examples/flaky_fetch.yaml",
        "--input",
        '{"resource": "res:1"}',
        "--workers",
        str(files / "failing_workers.py"),
        "--mode",
        "inprocess",
        env={"ORBIT_COLUMNS": "70"},
    )
    assert res.returncode == 1
    timeline = [line for line in res.stdout.splitlines() if "UPSTREAM_DOWN" in line]
    assert timeline and all(len(line) <= 70 and line.endswith("…") for line in timeline)
    progress = [line for line in res.stderr.splitlines() if line.startswith("[")]
    assert progress and all(len(line) <= 70 for line in progress)


def test_for_over_a_string_fails_with_an_expression_error_naming_the_step(cli, files):
    res = cli(
        "run", str(files / "strings.yaml"), "--input", '{"name": "ada"}', "--mode", "inprocess", "--json"
    )
    assert res.returncode == 1
    doc = json.loads(res.stdout)
    assert "history_truncated" not in doc  # a short run's timeline is whole
    err = doc["execution"]["error"]
    assert err["code"] == "EXPRESSION_ERROR"
    assert 'each.for: must give an array, but gave a string "ada"' in err["message"]
    res = cli("run", str(files / "strings.yaml"), "--mode", "inprocess", "--json")
    assert "gave null (a missing path?)" in json.loads(res.stdout)["execution"]["error"]["message"]


def test_graph_prints_mermaid_with_after_when_for_and_compensate(cli):
    res = cli("graph", "examples/order_fulfilment.yaml")
    assert res.returncode == 0, res.stderr
    text = res.stdout
    assert text.startswith("flowchart TD")
    assert "-. compensate .->" in text and "undo reserve" in text  # compensate
    assert "ship[*]" in text and "for each of input.items" in text  # for
    assert "-->" in text  # after / steps.X reads
    assert "when steps.approval.output.approved = true" in text  # when


def test_every_option_and_argument_has_help_with_examples(cli):
    from orbit.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, sp in sub.choices.items():
        assert sp.epilog and "examples:" in sp.epilog, name
        for action in sp._actions:
            if action.dest != "help":
                assert action.help, f"orbit {name} {action.option_strings or action.dest}: no help"
    text = cli("run", "--help").stdout
    assert "(default: server)" in text and "(default: 300.0)" in text and "examples:" in text


def test_live_progress_shows_readable_durations(cli):
    res = cli(
        "run", "examples/trial_reminder.yaml", "--input", '{"email": "a@b.c"}', *MISC, "--mode", "inprocess"
    )
    assert res.returncode == 0, res.stderr
    stamps = [line.split("]")[0] + "]" for line in res.stderr.splitlines() if line.startswith("[")]
    assert "[     7d]" in stamps, stamps  # the 7-day sleep, as the timeline writes it, not [604800.0s]
    assert all(len(s) == 9 for s in stamps), stamps  # [ + 7 columns + ]: never 604800.0s


def test_json_is_one_document_even_when_the_command_fails(cli, files):
    res = cli("run", "missing_flow.yaml", "--json")
    assert res.returncode == 2 and "Traceback" not in res.stdout + res.stderr
    assert json.loads(res.stdout)["error"] == {
        "code": "USAGE_ERROR",
        "message": "orbit run: missing_flow.yaml: file not found",
    }
    res = cli(
        "run", str(files / "sleepy.yaml"), "--real-time", "--timeout", "1", "--mode", "inprocess", "--json"
    )
    assert res.returncode == 1
    assert res.stdout.startswith("{"), (res.stdout, res.stderr)
    doc = json.loads(res.stdout)  # how far it got, and why it stopped
    assert doc["execution"]["status"] == "RUNNING" and doc["error"]["code"] == "TIMEOUT"
    res = cli("describe", "x", "--url", "http://127.0.0.1:9", "--json")
    assert res.returncode == 1 and json.loads(res.stdout)["error"]["code"] == "Unreachable"
