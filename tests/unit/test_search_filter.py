"""The filter of `orbit list --where` / `orbit batch` (orbit/core/search.py): strict parsing of
hostile text with the position named, the plan (which index, or a refusal naming the one it
lacks), and the combined filter through the API, the Client and the CLI."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.cli import main as orbit_cli
from orbit.core.search import FilterError, parse, plan
from orbit.service.http import handle_request
from test_list_filters import three  # noqa: F401 - the fixture
from test_paged_reads import InProcessClient


@pytest.mark.parametrize(("text", "message"), [
    ("tier == gold", "at 6: use = for equality (not ==)"),
    ("tier <> gold", "at 6: use != for inequality (not <>)"),
    ("tier = gold OR n = 1", "at 13: OR is not supported"),
    ("tier = gold n = 1", "at 13: expected AND between conditions, found 'n'"),
    ("tier = gold AND", "at 16: expected a field or attribute name, found the end of the filter"),
    ("tier IN (a, b", "at 14: the IN list is not closed"),
    ("tier IN a", "at 9: IN takes a list in parentheses"),
    ("status = DONE", "at 10: status is one of RUNNING"),
    ("workflow > a", "at 10: `workflow` takes =, !=, IN, not >"),
    ("started > yesterday", "at 11: started: must be an RFC 3339 time"),
    ('tier = "gold', 'at 8: a "string" that is not closed'),
    ("tier = 'gold", "at 8: a 'string' that is not closed"),
    ("tier = [1]", "at 8: expected a value, found '[1]'"),
    ("tier = gold\x00", "at 12: control character"),
    ("1tier = gold", "at 1: expected a field or attribute name"),
    ("a" * 41 + " = 1", "at 1: attribute name"),
    ("n = 1e999", "at 5: 1e999 is not a finite number"),
    ("n = 9007199254740993", "at 5: attribute 'n': 9007199254740993 is outside +-2^53"),
    ("x = 1 AND " * 20 + "x = 1", "at most 20 conditions"),
    ("x IN (" + ",".join(["1"] * 26) + ")", "an IN list holds at most 25 values"),
    ("x = " + "a" * 5000, "a filter is at most 4000 characters"),
])
def test_hostile_filter_text_gets_one_clear_line_naming_the_position(text: str, message: str) -> None:
    with pytest.raises(FilterError) as e:
        parse(text)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_the_plan_uses_one_key_condition_and_refuses_whole_table_reads_naming_the_missing_index() -> None:
    p = plan(parse("status IN (FAILED, RUNNING) AND tier = gold AND n > 1"))
    assert p.partitions == ('AT#tier="gold"',)
    assert plan(parse("tier IN (a, b) AND kind = x AND kind != y")).partitions == ('AT#kind="x"',)
    assert plan(parse("status != RUNNING AND workflow = w")).partitions == tuple(
        f"ST#{s}" for s in ("COMPENSATING", "COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT"))
    p = plan(parse("workflow IN (a, b) AND started >= 2026-03-01T00:00:00Z AND started < 1772500000000"))
    assert (p.index, p.partitions, p.after_ms, p.before_ms) == ("gsi1", ("WF#a", "WF#b"), 1772323200000,
                                                                1772500000000)
    p = plan(parse("started > 1000 AND ended < 5000"))
    assert p.partitions == ("ST#COMPLETED", "ST#FAILED", "ST#CANCELLED", "ST#TIMED_OUT")
    assert p.after_ms == 1001
    assert plan(parse("attributes.status = x")).partitions == ('AT#status="x"',)
    for text, lacks in [("amount > 100", "no index by ranges or exclusions of attribute 'amount'"),
                        ("tier != gold", "no index by ranges or exclusions of attribute 'tier'"),
                        ("ended < 2026-03-01T00:00:00Z", "no index by end time"),
                        ("id STARTS_WITH ord-", "no index by id prefix"),
                        ("workflow != a", "no index by workflows other than one")]:
        with pytest.raises(FilterError) as e:
            plan(parse(text))
        assert f"`{text}` alone would read the whole table: there is {lacks}" in str(e.value)


def ids(body: dict[str, Any]) -> list[str]:
    return [e["execution_id"] for e in body["executions"]]


def test_a_combined_filter_through_the_api_the_client_and_the_cli(
        three: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    where = "workflow = wf AND status IN (COMPLETED) AND tier = gold AND n > 0 AND id STARTS_WITH e"
    status, body = handle_request(three.engine, "GET", "/executions", query={"where": where})
    assert status == 200 and ids(body) == ["e2"]
    status, body = handle_request(three.engine, "GET", "/executions",
                                  query={"where": "n >= 1", "status": "COMPLETED", "limit": "1"})
    assert status == 200 and ids(body) == ["e2"] and body["next_cursor"]
    status, body = handle_request(three.engine, "GET", "/executions", query={"where": "n > 0"})
    assert status == 400 and body["error"]["problems"][0]["path"] == "query.where"
    assert "would read the whole table" in body["error"]["message"]
    client = InProcessClient(three.engine)
    assert ids(client.list(where="tier IN (gold, silver) AND n < 2")) == ["e1", "e0"]
    assert ids(client.list(where={"tier": "gold", "n": 2})) == ["e2"]
    monkeypatch.setattr(orbit_cli, "_client", lambda args: client)
    where = "tier = gold AND n != 2 AND started >= 2023-11-14T00:00:00Z"
    assert orbit_cli.main(["list", "--where", where]) == 0
    out = capsys.readouterr().out
    assert "e0" in out and "e1" not in out and "e2" not in out
    assert orbit_cli.main(["list", "--where", "n > 0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("orbit list: --where: `n > 0` alone would read the whole table")
    assert "Traceback" not in err


def test_orbit_list_explain_says_what_a_filter_reads_and_sends_nothing(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def no_client(args: Any) -> Any:
        raise AssertionError("--explain sends nothing")

    monkeypatch.setattr(orbit_cli, "_client", no_client)
    argv = ["list", "--explain", "--status", "RUNNING", "--where", "tier = gold AND n > 1"]
    assert orbit_cli.main(argv) == 0
    out = capsys.readouterr().out
    assert out == ('reads gsi1 partition(s) AT#tier="gold"; '
                   "each row read is checked for: n > 1 AND status = RUNNING\n")

    assert orbit_cli.main(["list", "--explain", "--where", "status != RUNNING AND ended < 5000"]) == 0
    assert capsys.readouterr().out.startswith("reads gsi2 partition(s) ST#COMPENSATING, ST#COMPLETED")
    assert orbit_cli.main(["list", "--explain", "--where", "n > 1"]) == 2
    assert "would read the whole table" in capsys.readouterr().err
