"""Task and queue limits count every dispatch of the task, from every workflow (docs/flow-control.md
section 2, docs/decisions/flow3-task-limits.md): a definition's declaration is recorded in the
deployment's registry; a workflow that does not declare it (a definition or code) is counted too;
a declaration with another key is refused at registration; unlimited work still makes no request."""

from __future__ import annotations

from typing import Any

import orbit
import pytest
from orbit.errors import ValidationError
from orbit.testing.simulator import Simulator, late, succeed
from orbit.workflow import CodeRegistry
from test_flow_limits import peak, spans, wf

PARTNER = {"partner.call": {"concurrency": {"limit": 2, "key": "{% input.partner %}"}}}
STEP = {"task": "partner.call", "input": {"partner": "{% input.p %}"}}


def test_a_task_limit_counts_attempts_of_workflows_that_do_not_declare_it() -> None:
    reg = CodeRegistry()

    @orbit.workflow("coded", registry=reg)  # declares nothing
    def coded(ctx: Any, input: Any) -> Any:
        return ctx.step("partner.call", {"partner": input["p"]})

    sim = Simulator()
    sim.register(wf("declares", {"a": STEP}, tasks=PARTNER))
    sim.register(wf("silent", {"b": STEP}))  # declares nothing either
    sim.register(coded)
    sim.worker("partner.call", late(1000, "ok"))
    ids = [sim.start(w, {"p": p}, id=f"{w}-{p}{i}") for w in ("declares", "silent", "coded")
           for p in "ab" for i in range(2)]
    sim.run()
    assert {sim.describe(e)["status"] for e in ids} == {"COMPLETED"}
    for p in "ab":
        mine = [e for e in ids if e.endswith(p + "0") or e.endswith(p + "1")]
        runs = spans(sim, mine, "StepDispatched", "StepSucceeded")
        assert peak(runs) == 2, runs  # 6 attempts of one partner, at most 2 at once
        assert sorted(a for a, _, _ in runs) == [0, 0, 1000, 1000, 2000, 2000]
    assert all(not c.holders and not c.waiting for c in sim.limits.counters.values())


def test_a_queue_limit_counts_every_workflow_on_the_queue() -> None:
    sim = Simulator()
    sim.register(wf("declares", {"a": {"task": "t.a", "queue": "erp"}}, queues={"erp": {"concurrency": 1}}))
    sim.register(wf("silent", {"b": {"task": "t.b", "queue": "erp"}}))
    sim.worker("t.a", late(100, "ok"))
    sim.worker("t.b", late(100, "ok"))
    ids = [sim.start(w, {}, id=f"{w}{i}") for w in ("declares", "silent") for i in range(2)]
    sim.run()
    assert peak(spans(sim, ids, "StepDispatched", "StepSucceeded")) == 1


def test_a_later_declaration_may_change_the_number_but_not_the_key() -> None:
    sim = Simulator()
    sim.register(wf("one", {"a": STEP}, tasks=PARTNER))
    wider = {"partner.call": {"concurrency": {"limit": 3, "key": "{% input.partner %}"}}}
    sim.register(wf("two", {"a": STEP}, tasks=wider))  # the same key: the newest number holds
    with pytest.raises(ValidationError) as e:
        sim.register(wf("three", {"a": STEP},
                        tasks={"partner.call": {"concurrency": {"limit": 3, "key": "{% input.region %}"}}}))
    problem = e.value.problems[0]
    assert problem.path == "tasks.partner.call.concurrency.key"
    assert "keyed by '{% input.partner %}' (declared by two v1)" in problem.message
    assert "\n" not in str(e.value)
    with pytest.raises(Exception):
        sim.engine.registry.get("three")  # refused as a whole: nothing of it was registered
    sim.register(wf("four", {"a": STEP}, tasks={"partner.call": {"priority": 2}}))  # keeps the limit
    sim.register(wf("silent", {"b": STEP}))
    sim.worker("partner.call", late(1000, "ok"))
    ids = [sim.start("silent", {"p": "a"}, id=f"s{i}") for i in range(6)]
    sim.run()
    assert peak(spans(sim, ids, "StepDispatched", "StepSucceeded")) == 3


def test_unlimited_tasks_make_no_request_while_another_task_is_limited() -> None:
    sim = Simulator()
    sim.register(wf("declares", {"a": STEP}, tasks=PARTNER))
    sim.register(wf("plain", {"a": {"task": "t.a"}, "b": {"task": "t.a", "after": ["a"]}}))
    sim.worker("t.a", succeed())
    for i in range(5):
        sim.start("plain", {}, id=f"p{i}")
    sim.run()
    assert sim.limits.requests == 0


def test_get_limits_and_orbit_limits_list_the_shared_limits(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import orbit.cli.main as orbit_cli
    from test_paged_reads import InProcessClient

    sim = Simulator()
    sim.register(wf("declares", {"a": STEP}, tasks=PARTNER, queues={"erp": {"concurrency": 3}}))
    shared = {s["limit"]: s for s in sim.engine.limits()["shared"]}
    assert shared["task:partner.call"] == {"limit": "task:partner.call", "from": "declares v1",
                                           **PARTNER["partner.call"]}
    assert shared["queue:erp"]["concurrency"] == 3
    monkeypatch.setattr(orbit_cli, "_client", lambda args: InProcessClient(sim.engine))
    assert orbit_cli.main(["limits"]) == 0
    out = capsys.readouterr().out
    assert "shared task:partner.call" in out and '"key": "{% input.partner %}"' in out
    assert "(declared by declares v1)" in out
