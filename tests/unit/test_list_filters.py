"""Finding executions: `orbit list` / the API / the Client by start-time range (RFC 3339) and by a
search attribute, over an in-memory engine."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.cli import main as orbit_cli
from orbit.service.http import handle_request
from test_paged_reads import InProcessClient

from tests.unit.dsl_harness import T0, sim_with

HOUR = 3600_000


@pytest.fixture
def three() -> Any:
    """e0, e1, e2 started an hour apart from T0 (2023-11-14T22:13:20Z); tier gold, silver, gold."""
    sim = sim_with({"a": {"compute": "{% 1 %}"}},
                   attributes={"tier": "{% input.tier %}", "n": "{% input.n %}"})
    for i, tier in enumerate(["gold", "silver", "gold"]):
        sim.start("wf", {"tier": tier, "n": i}, id=f"e{i}")
        sim.run()
        assert sim.describe(f"e{i}")["status"] == "COMPLETED"
        sim.advance(HOUR)
    return sim


def ids(body: dict[str, Any]) -> list[str]:
    return [e["execution_id"] for e in body["executions"]]


def test_the_api_filters_by_an_rfc3339_start_range(three: Any) -> None:
    def listed(**query: str) -> list[str]:
        status, body = handle_request(three.engine, "GET", "/executions", query=query)
        assert status == 200, body
        return ids(body)

    assert listed() == ["e2", "e1", "e0"]
    assert listed(started_after="2023-11-14T23:13:20Z") == ["e2", "e1"]  # inclusive
    assert listed(started_before="2023-11-15T00:13:20Z") == ["e1", "e0"]  # exclusive
    assert listed(started_after="2023-11-15T00:13:20+01:00", started_before="2023-11-15T00:13:20Z") == ["e1"]
    assert listed(started_after=str(T0 + HOUR), limit="1") == ["e2"]  # epoch ms still works
    status, body = handle_request(three.engine, "GET", "/executions", query={"started_before": "2023-11-15"})
    assert status == 400 and body["error"]["problems"][0]["path"] == "query.started_before"
    assert "needs a UTC offset or Z" in body["error"]["problems"][0]["message"]


def test_the_api_and_the_client_find_executions_by_a_search_attribute(three: Any) -> None:
    status, body = handle_request(three.engine, "GET", "/executions", query={"where": "tier=gold"})
    assert status == 200 and ids(body) == ["e2", "e0"]
    assert body["executions"][0]["attributes"] == {"tier": "gold", "n": 2}
    client = InProcessClient(three.engine)
    assert ids(client.list(where={"n": 1})) == ["e1"]
    assert ids(client.list(where='tier=gold', started_before="2023-11-15T00:13:20Z")) == ["e0"]
    assert ids(client.list(where={"n": "1"})) == []  # the string "1" is not the number 1
    status, body = handle_request(three.engine, "GET", "/executions", query={"where": "tier"})
    assert status == 400 and body["error"]["problems"][0]["path"] == "query.where"


def test_orbit_list_takes_the_filters_and_refuses_bad_ones_clearly(
        three: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    client = InProcessClient(three.engine)
    monkeypatch.setattr(orbit_cli, "_client", lambda args: client)
    assert orbit_cli.main(["list", "--where", "tier=gold", "--started-after", "2023-11-15T00:00:00Z"]) == 0
    out = capsys.readouterr().out
    assert "e2" in out and "e0" not in out and "e1" not in out
    assert orbit_cli.main(["list", "--started-after", "yesterday"]) == 2
    err = capsys.readouterr().err
    assert "--started-after: must be an RFC 3339 time like 2026-03-30T07:00:00Z" in err
    assert "Traceback" not in err
    assert orbit_cli.main(["list", "--where", "tier"]) == 2
    err = capsys.readouterr().err
    assert "--where: at 5: expected an operator (=, !=, <, <=, >, >=, IN, STARTS_WITH)" in err
