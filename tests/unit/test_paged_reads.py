"""Reads are paged by default (docs/limits.md): history, describe's steps and the list have a
default and a maximum page size, the client and the CLI read page by page, and `orbit history`
and `orbit describe` print one page with the command for the next."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from dsl_harness import sim_with
from orbit.cli import main as orbit_cli
from orbit.client import ApiError, Client
from orbit.service.http import handle_request
from orbit.service.operations import HISTORY_PAGE, MAX_HISTORY_PAGE, MAX_STEPS_PAGE, STEPS_PAGE

ELEMENTS = 1500  # a compute fan-out: each element adds its own events, well past one page


@pytest.fixture(scope="module")
def fanned() -> tuple[Any, str]:
    sim = sim_with({"each": {"for": "{% [1..input.n] %}", "compute": "{% item * 2 %}"}})
    eid = sim.start("wf", {"n": ELEMENTS}, id="big")
    sim.run_until_idle()
    assert sim.describe(eid)["status"] == "COMPLETED"
    return sim, eid


class InProcessClient(Client):
    """The real client, its requests answered by the API router in this process."""

    def __init__(self, engine: Any) -> None:
        self.engine, self.attempts, self.requests = engine, 1, 0

    def _once(self, method: str, path: str, body: Any) -> Any:
        self.requests += 1
        parts = urlsplit(path)
        status, payload = handle_request(self.engine, method, parts.path, body, dict(parse_qsl(parts.query)))
        if status >= 400:
            raise ApiError(status, payload, method, path)
        return payload


def get(sim: Any, path: str, **query: Any) -> tuple[int, Any]:
    return handle_request(sim.engine, "GET", path, None, {k: str(v) for k, v in query.items()})


def test_history_has_a_default_and_a_maximum_page(fanned: tuple[Any, str]) -> None:
    sim, eid = fanned
    total = len(sim.history(eid))
    assert total > HISTORY_PAGE + 10
    status, page = get(sim, f"/executions/{eid}/history")
    assert status == 200 and len(page) == HISTORY_PAGE and page[0]["seq"] == 1
    status, page = get(sim, f"/executions/{eid}/history", after_seq=page[-1]["seq"], limit=10)
    assert [e["seq"] for e in page] == list(range(HISTORY_PAGE + 1, HISTORY_PAGE + 11))
    for bad in (0, MAX_HISTORY_PAGE + 1, "x"):
        status, body = get(sim, f"/executions/{eid}/history", limit=bad)
        assert status == 400 and "query.limit" in body["error"]["message"]


def test_describe_pages_the_units_of_a_fan_out(fanned: tuple[Any, str]) -> None:
    sim, eid = fanned
    units = list(sim.describe(eid)["steps"])
    assert len(units) == ELEMENTS + 1
    status, first = get(sim, f"/executions/{eid}")
    assert status == 200 and list(first["steps"]) == units[:STEPS_PAGE]
    assert first["steps_next"] == units[STEPS_PAGE - 1] and first["status"] == "COMPLETED"
    status, rest = get(sim, f"/executions/{eid}", steps_after=first["steps_next"], steps_limit=MAX_STEPS_PAGE)
    assert list(rest["steps"]) == units[STEPS_PAGE:] and rest["steps_next"] is None
    status, body = get(sim, f"/executions/{eid}", steps_after="nope")
    assert status == 400 and "query.steps_after" in body["error"]["message"]
    status, body = get(sim, f"/executions/{eid}", steps_limit=MAX_STEPS_PAGE + 1)
    assert status == 400


def test_the_client_reads_the_whole_history_page_by_page_or_just_what_it_asks_for(
    fanned: tuple[Any, str],
) -> None:
    sim, eid = fanned
    client = InProcessClient(sim.engine)
    assert client.history(eid) == sim.history(eid)
    assert client.requests == len(sim.history(eid)) // HISTORY_PAGE + 1
    client.requests = 0
    assert client.history(eid, after_seq=5, limit=3) == sim.history(eid)[5:8]
    assert client.requests == 1


def test_orbit_history_and_describe_print_one_page_and_say_how_to_get_the_next(
    fanned: tuple[Any, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    sim, eid = fanned
    client = InProcessClient(sim.engine)
    monkeypatch.setattr(orbit_cli, "_client", lambda args: client)
    assert orbit_cli.main(["history", eid, "--raw"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.strip().splitlines()) == HISTORY_PAGE
    assert f"--after-seq {HISTORY_PAGE}" in captured.err
    assert orbit_cli.main(["history", eid, "--json", "--after-seq", "10", "--limit", "5"]) == 0
    assert '"seq": 11' in capsys.readouterr().out
    assert orbit_cli.main(["describe", eid]) == 0
    out = capsys.readouterr().out
    assert f"--steps-after 'each[{STEPS_PAGE - 2}]'" in out  # units: `each`, then each[0], each[1], ...
    assert orbit_cli.main(["history", eid, "--limit", "0"]) == 1
    assert "Traceback" not in capsys.readouterr().err
