"""`orbit redrive` / `orbit fork` and orbit.Client over HTTP: the API's routes, what a user sees.

The API (`orbit.service.http.handle_request`) runs over the simulator's engine behind a loopback server,
so each request goes through the Client's transport and the CLI's error handling."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from http_servers import Quiet, serve
from orbit.client import ApiError, Client
from orbit.core.history.events import TaskError
from orbit.service.http import handle_request

from tests.unit.dsl_harness import sim_with

FIXED = [False]


def _b(input: Any, ctx: Any) -> Any:
    if not FIXED[0]:
        raise TaskError("BUG", "b is broken", retryable=False)
    return {"v": "b"}


def api_of(sim: Any) -> type[Quiet]:
    lock = threading.Lock()

    class Api(Quiet):
        def _any(self) -> None:
            with lock:
                status, body = handle_request(sim.engine, self.command, self.path, self.read_body())
                sim.run()
            self.reply(status, json.dumps(body).encode())

        do_GET = do_POST = _any  # noqa: N815 - the stdlib's names

    return Api


@pytest.fixture
def failed() -> Any:
    FIXED[0] = False
    sim = sim_with({"a": {"task": "t.a", "input": {}}, "b": {"task": "t.b", "input": {}, "after": ["a"]}})
    sim.worker("t.a", lambda i, c: {"v": "a"})
    sim.worker("t.b", _b)
    sim.start("wf", {}, id="e1")
    sim.run()
    assert sim.describe("e1")["status"] == "FAILED"
    return sim


def test_client_redrive_and_fork(failed: Any) -> None:
    with serve(api_of(failed)) as url:
        client = Client(url)
        FIXED[0] = True
        out = client.redrive("e1", "req-1")
        assert out == {"id": "e1", "redrive_count": 1, "steps": ["b"]}
        assert client.redrive("e1", "req-1") == out  # a retried request: the same answer
        assert client.describe("e1")["status"] == "COMPLETED"
        with pytest.raises(ApiError) as err:
            client.redrive("e1")
        assert err.value.status == 409 and "is COMPLETED" in str(err.value)
        fork = client.fork("e1", "b")["id"]
        assert fork.startswith("e1-fork-")
        assert client.describe(fork)["forked_from"] == {"execution_id": "e1", "step": "b"}
        with pytest.raises(ApiError) as err:
            client.fork("e1", "nope")
        assert err.value.status == 400 and "has no step 'nope'" in str(err.value)
        with pytest.raises(ApiError) as err:
            client.redrive("missing")
        assert err.value.status == 404


def test_cli_redrive_and_fork(failed: Any, capsys: Any) -> None:
    from orbit.cli import main as orbit_cli

    with serve(api_of(failed)) as url:
        FIXED[0] = True
        assert orbit_cli.main(["redrive", "e1", "--url", url]) == 0
        assert capsys.readouterr().out.strip() == "e1 redriven (redrive #1); running again: b"
        assert orbit_cli.main(["redrive", "e1", "--url", url]) == 1
        err = capsys.readouterr().err
        assert "orbit redrive: POST /executions/e1/redrive: HTTP 409" in err and "is COMPLETED" in err
        assert "Traceback" not in err
        assert orbit_cli.main(["fork", "e1", "--from-step", "b", "--id", "e1-b", "--url", url, "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == {"id": "e1-b"}
        assert orbit_cli.main(["fork", "e1", "--from-step", "zz", "--url", url]) == 1
        assert "has no step 'zz'; its steps: a, b" in capsys.readouterr().err
