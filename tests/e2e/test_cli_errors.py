"""What a user sees when a CLI command is given something wrong (found by the qa pass)."""

from __future__ import annotations


def test_list_refuses_an_unknown_status_and_takes_any_case(cli):
    res = cli("list", "--status", "done", "--url", "http://127.0.0.1:9")
    assert res.returncode == 2
    assert "invalid choice: 'DONE'" in res.stderr and "COMPLETED" in res.stderr
