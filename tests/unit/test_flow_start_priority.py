"""A start's own priority (docs/flow-control.md, "Per call"): `POST /executions` field `priority`,
`Client.start(priority=)`, `orbit start --priority N`; it overrides the workflow's declared
priority in its limits' lines; bad values are refused with 400 naming `body.priority`."""

from __future__ import annotations

from typing import Any

import orbit.cli.main as orbit_cli
import pytest
from orbit.errors import NotFound, ValidationError
from orbit.service.http import handle_request
from orbit.testing.simulator import Simulator, late
from test_flow_limits import spans, wf
from test_paged_reads import InProcessClient


def jobs(priority: Any = None) -> Simulator:
    sim = Simulator()
    top: dict[str, Any] = {"concurrency": {"limit": 1}}
    if priority is not None:
        top["priority"] = priority
    sim.register(wf("jobs", {"a": {"task": "t.a"}}, **top))
    sim.worker("t.a", late(100, "ok"))
    return sim


def order(sim: Simulator, ids: list[str]) -> list[str]:
    return [e for _, _, e in sorted(spans(sim, ids, "WorkflowCreated", "WorkflowCompleted"))]


def test_a_start_priority_overtakes_earlier_starts_and_overrides_the_declared_one() -> None:
    sim = jobs(priority="{% input.urgent ? 1 : 5 %}")
    ids = [sim.start("jobs", {"urgent": False}, id=f"bulk{i}") for i in range(3)]
    ids.append(sim.start("jobs", {"urgent": False}, id="rush", priority=1))  # declared 5, given 1
    ids.append(sim.start("jobs", {"urgent": True}, id="slow", priority=5))  # declared 1, given 5
    sim.run()
    assert order(sim, ids) == ["bulk0", "rush", "bulk1", "bulk2", "slow"]


def test_post_executions_takes_priority_and_the_client_sends_it() -> None:
    sim = jobs()
    status, first = handle_request(sim.engine, "POST", "/executions", {"workflow": "jobs", "id": "b0"})
    assert status == 201
    client = InProcessClient(sim.engine)
    client.start("jobs", {}, id="b1")
    client.start("jobs", {}, id="b2", priority=4)
    client.start("jobs", {}, id="u", priority=2)
    assert sim.describe("u")["flow"]["priority"] == 2
    sim.run()
    assert order(sim, ["b0", "b1", "b2", "u"]) == ["b0", "u", "b1", "b2"]


@pytest.mark.parametrize("bad", [0, 6, "1", 2.5, True, [1], {"p": 1}])
def test_a_bad_priority_is_refused_with_400_naming_the_field(bad: Any) -> None:
    sim = jobs()
    status, answer = handle_request(sim.engine, "POST", "/executions",
                                    {"workflow": "jobs", "id": "x1", "priority": bad})
    assert status == 400, answer
    problem = answer["error"]["problems"][0]
    assert problem["path"] == "body.priority" and "1 (highest) .. 5" in problem["message"], answer
    with pytest.raises(ValidationError, match=r"priority: must be a whole number"):
        sim.start("jobs", {}, id="x2", priority=bad)
    for eid in ("x1", "x2"):  # nothing started, nothing waits
        with pytest.raises(NotFound):
            sim.describe(eid)


def test_orbit_start_priority(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    sim = jobs()
    client = InProcessClient(sim.engine)
    monkeypatch.setattr(orbit_cli, "_client", lambda args: client)
    sent: list[dict[str, Any]] = []
    real = client._once

    def spy(method: str, path: str, body: Any) -> Any:
        if method == "POST" and path == "/executions":
            sent.append(body)
        return real(method, path, body)

    monkeypatch.setattr(client, "_once", spy)
    assert orbit_cli.main(["start", "jobs", "--id", "c1", "--priority", "2"]) == 0
    assert sent[-1]["priority"] == 2
    assert orbit_cli.main(["start", "jobs", "--id", "c2"]) == 0
    assert "priority" not in sent[-1]
    with pytest.raises(SystemExit):
        orbit_cli.main(["start", "jobs", "--id", "c3", "--priority", "9"])
    assert "--priority" in capsys.readouterr().err


def test_signal_with_start_takes_its_slot_now_or_is_refused_naming_the_limit() -> None:
    sim = Simulator()
    sim.register(wf("door", {"w": {"wait_for": "go"}}, concurrency={"limit": 1, "key": "{% input.c %}"},
                    signals={"go": {}}))
    sim.start("door", {"c": "acme"}, id="a")
    body = {"workflow": "door", "signal": "go", "input": {"c": "acme"}, "signal_id": "s1"}
    status, answer = handle_request(sim.engine, "POST", "/executions/b/signal-with-start", body)
    assert status == 409 and answer["error"]["code"] == "LIMIT_FULL", answer
    assert "limit 'workflow:door' key 'acme' has 1 of 1 running" in answer["error"]["message"]
    with pytest.raises(NotFound):
        sim.describe("b")  # nothing was recorded
    other = {**body, "input": {"c": "zeta"}}  # another key has room
    assert handle_request(sim.engine, "POST", "/executions/z/signal-with-start", other)[0] == 202
    sim.signal("a", "go", {})
    sim.run()
    assert sim.describe("a")["status"] == "COMPLETED"
    status, answer = handle_request(sim.engine, "POST", "/executions/b/signal-with-start", body)
    assert status == 202 and answer["started"] is True
    sim.run()
    assert sim.describe("b")["status"] == "COMPLETED"
    assert all(not c.holders and not c.waiting for c in sim.limits.counters.values())


def test_signal_with_start_under_a_start_rate_takes_only_a_token_there_now() -> None:
    sim = Simulator()
    sim.register(wf("rated", {"w": {"wait_for": "go"}}, rate={"limit": 1, "period": "1h", "burst": 1},
                    signals={"go": {}}))
    body = {"workflow": "rated", "signal": "go", "input": {}}
    assert handle_request(sim.engine, "POST", "/executions/r1/signal-with-start", body)[0] == 202
    status, answer = handle_request(sim.engine, "POST", "/executions/r2/signal-with-start", body)
    assert status == 409 and "rate limit 'workflow:rated'" in answer["error"]["message"], answer
    sim.run()
    assert sim.describe("r1")["status"] == "COMPLETED"
