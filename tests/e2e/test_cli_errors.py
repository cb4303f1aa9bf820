"""What a user sees when a CLI command is given something wrong (found by the qa pass)."""

from __future__ import annotations


def test_list_refuses_an_unknown_status_and_takes_any_case(cli):
    res = cli("list", "--status", "done", "--url", "http://127.0.0.1:9")
    assert res.returncode == 2
    assert "invalid choice: 'DONE'" in res.stderr and "COMPLETED" in res.stderr


def test_run_with_a_signal_and_refused_input_shows_the_contract_violation(cli):
    res = cli(
        "run", "examples/order_fulfilment.yaml", "--input", '{"order_id": 1}', "--mode", "inprocess",
        "--workers", "examples/workers/orders.py", "--signal", 'approval={"approved": true}', "--quiet",
    )
    assert res.returncode == 1, res.stderr
    assert "status: FAILED" in res.stdout and "INPUT_CONTRACT_VIOLATION" in res.stdout
    assert "--signal approval: execution" in res.stderr and "has already ended (FAILED)" in res.stderr


def test_validate_and_run_a_code_workflow_file(cli, tmp_path):
    ok = cli("validate", "examples/code/order_saga.py")
    assert ok.returncode == 0
    assert ok.stdout.strip() == "examples/code/order_saga.py: valid (order-fulfilment-code v1)"
    broken = tmp_path / "broken_wf.py"
    broken.write_text(
        'import orbit\n\n@orbit.workflow("x", version="1")\ndef x(ctx, input):\n    return ctx.step("a", {}\n'
    )
    for cmd in ("validate", "run"):
        res = cli(cmd, str(broken), "--json")
        assert res.returncode == 1, res.stderr
        assert "Traceback" not in res.stderr
        assert f"{broken}:5: SyntaxError: '(' was never closed" in res.stderr + res.stdout
    raising = tmp_path / "raising_wf.py"
    raising.write_text('import orbit\nraise RuntimeError("no config")\n')
    res = cli("validate", str(raising))
    assert res.returncode == 1 and f"{raising}:2: importing it raised RuntimeError: no config" in res.stderr
    res = cli("validate", "examples/workers/misc.py")
    assert res.returncode == 1 and "no @orbit.workflow function in it" in res.stderr


def test_run_without_the_child_definition_says_how_to_register_it(cli):
    res = cli(
        "run", "examples/order_with_invoice.yaml", "--input", '{"order_id": "o1", "amount": 12}',
        "--workers", "examples/workers/misc.py", "--mode", "inprocess", "--quiet",
    )
    assert res.returncode == 1
    assert "no workflow named 'invoicing' is registered" in res.stdout
    assert "hint:   register the child workflow too: --register CHILD.yaml" in res.stdout


def test_run_takes_template_parameters_so_the_http_example_can_run(cli):
    import json

    from tests.e2e.http_servers import echo, serve

    with serve(echo([])) as server:
        url = f"{server}/x"
        base = ["run", "examples/http_ping.yaml", "--input", json.dumps({"url": url}), "--id", "p1"]
        allow = ["HttpTaskEnabled=true", "HttpAllowedHosts=127.0.0.1", "HttpPrivateHosts=127.0.0.1"]
        res = cli(*base, "--mode", "inprocess", "--json", *(a for p in allow for a in ("--parameter", p)))
        assert res.returncode == 0, res.stderr
        output = json.loads(res.stdout)["execution"]["output"]
        assert output == {"status": 200, "echoed": {"hello": "orbit", "id": "p1"}}
        bad = cli(*base, "--parameter", "HttpTaskEnabled")
        assert bad.returncode == 2 and "--parameter 'HttpTaskEnabled': expected KEY=VALUE" in bad.stderr


def test_describe_shows_progress_and_why_an_execution_is_parked(monkeypatch, capsys):
    from orbit.cli import main as orbit_cli

    desc = {
        "id": "e1", "workflow": "wf", "version": "1", "status": "RUNNING", "input": {}, "output": None,
        "error": None, "steps": {}, "progress": {"done": 3, "of": 10},
        "parked": {"code": "BUILD_MISMATCH", "message": "build sha256:ab is not registered"},
    }

    class Stub:
        def describe(self, eid, **paging):
            return desc

    monkeypatch.setattr(orbit_cli, "_client", lambda args: Stub())
    assert orbit_cli.main(["describe", "e1"]) == 0
    out = capsys.readouterr().out
    assert 'progress: {"done": 3, "of": 10}' in out
    assert 'parked: {"code": "BUILD_MISMATCH"' in out


def test_describe_says_an_execution_is_paused(monkeypatch, capsys):
    from orbit.cli import main as orbit_cli

    desc = {"id": "e1", "workflow": "wf", "version": "1", "status": "RUNNING", "input": {}, "output": None,
            "error": None, "steps": {}, "paused": {"since_ms": 1_700_000_000_000, "reason": "outage"}}

    class Stub:
        def describe(self, eid, **paging):
            return desc

    monkeypatch.setattr(orbit_cli, "_client", lambda args: Stub())
    assert orbit_cli.main(["describe", "e1"]) == 0
    out = capsys.readouterr().out
    assert "paused since 2023-11-14" in out and "(outage): `orbit unpause e1` lets it go on" in out


def test_dev_registers_code_workflow_files(monkeypatch, capsys):
    from orbit.cli import main as orbit_cli
    from orbit.local import devserver
    from orbit.workflow import REGISTRY

    seen = {}
    monkeypatch.setattr(devserver, "serve", lambda **kw: seen.update(kw) or 0)
    assert orbit_cli.main(["dev", "examples/code/order_saga.py", "examples/trial_reminder.yaml"]) == 0
    assert seen["definitions"] == ["examples/trial_reminder.yaml"]  # the .py was imported, not parsed
    assert REGISTRY.find("order-fulfilment-code") is not None
    assert "code workflows of examples/code/order_saga.py: order-fulfilment-code" in capsys.readouterr().out


def test_list_says_when_there_are_more_pages(monkeypatch, capsys):
    from orbit.cli import main as orbit_cli

    calls = []

    class Stub:
        def list(self, **kw):
            calls.append(kw)
            row = {"execution_id": "e1", "workflow": "wf", "version": "1", "status": "RUNNING"}
            return {"executions": [row], "next_cursor": None if kw["cursor"] else "abc"}

    monkeypatch.setattr(orbit_cli, "_client", lambda args: Stub())
    assert orbit_cli.main(["list", "--limit", "1"]) == 0
    assert "(more: add --cursor abc)" in capsys.readouterr().out
    assert orbit_cli.main(["list", "--limit", "1", "--cursor", "abc"]) == 0
    assert "more" not in capsys.readouterr().out and calls[1]["cursor"] == "abc"
