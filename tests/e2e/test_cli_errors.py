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
