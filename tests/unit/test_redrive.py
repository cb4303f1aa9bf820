"""Redrive (orbit redrive) on the simulator: a FAILED or TIMED_OUT execution goes on where it stopped.

Definitions here; code workflows in test_redrive_code.py. Each scenario fixes the worker between the
failure and the redrive, then checks what ran again and what did not.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from dsl_harness import sim_with
from orbit.core.history.events import TaskError
from orbit.errors import NotFound, RedriveRefused, ValidationError
from orbit.service.engine import Engine


class Flaky:
    """A worker that fails (non-retryable) for the inputs in `broken` until `fixed`; counts runs."""

    def __init__(self, broken: set[Any] | None = None, output: Any = None) -> None:
        self.broken, self.fixed, self.output = broken, False, output
        self.runs: Counter[Any] = Counter()
        self.attempts: list[int] = []

    def __call__(self, input: Any, ctx: Any) -> Any:
        key = input.get("v") if isinstance(input, dict) else input
        self.runs[key] += 1
        self.attempts.append(ctx.attempt)
        if not self.fixed and (self.broken is None or key in self.broken):
            raise TaskError("BUG", f"broken for {key!r}", retryable=False)
        return self.output if self.output is not None else {"v": key}


def _types(sim: Any, eid: str) -> list[str]:
    return [e["type"] for e in sim.history(eid)]


def chain() -> tuple[Any, dict[str, Flaky]]:
    sim = sim_with({
        "a": {"task": "t.a", "input": {"v": "a"}},
        "b": {"task": "t.b", "input": {"v": "{% steps.a.output.v & 'b' %}"}, "retry": {"max_attempts": 2}},
        "c": {"task": "t.c", "input": {"v": "{% steps.b.output.v & 'c' %}"}},
    })
    workers = {"a": Flaky(set()), "b": Flaky(), "c": Flaky(set())}
    for name, w in workers.items():
        sim.worker(f"t.{name}", w)
    return sim, workers


def test_redrive_after_fixing_the_worker_runs_only_the_failed_step_and_what_follows() -> None:
    sim, w = chain()
    eid = sim.start("wf", {}, id="r-1")
    sim.run()
    assert sim.describe(eid)["status"] == "FAILED"
    assert w["b"].runs["ab"] == 1 and not w["c"].runs  # non-retryable: one attempt
    w["b"].fixed = True
    out = sim.redrive(eid)
    assert out["redrive_count"] == 1 and out["steps"] == ["b"]
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED", d
    assert d["redrive_count"] == 1 and d["error"] is None
    assert d["output"] == {"a": {"v": "a"}, "b": {"v": "ab"}, "c": {"v": "abc"}}
    assert w["a"].runs["a"] == 1  # the succeeded step kept its output and did not run again
    assert w["b"].runs["ab"] == 2 and w["b"].attempts == [1, 2]  # attempt numbers go on
    assert d["steps"]["b"]["attempt"] == 2
    types = _types(sim, eid)
    assert types.count("ExecutionRedriven") == 1 and types[-1] == "WorkflowCompleted"
    assert types.count("WorkflowFailed") == 1
    redriven = next(e for e in sim.history(eid) if e["type"] == "ExecutionRedriven")
    assert redriven["steps"] == ["b"] and redriven["children"] == [] and redriven["redrive_count"] == 1


def test_a_redriven_step_gets_a_fresh_retry_budget() -> None:
    sim, w = chain()
    w["b"].broken = None
    eid = sim.start("wf", {}, id="r-2")
    sim.run()
    sim.redrive(eid)
    sim.run()  # still broken: max_attempts 2 counts from the redrive, so one more attempt only
    assert sim.describe(eid)["status"] == "FAILED"
    assert w["b"].attempts == [1, 2] and sim.describe(eid)["redrive_count"] == 1
    w["b"].fixed = True
    sim.redrive(eid)
    sim.run()
    assert sim.describe(eid)["status"] == "COMPLETED" and w["b"].attempts == [1, 2, 3]


def test_a_fan_out_redrives_only_its_failed_elements() -> None:
    sim = sim_with({"each": {"for": "{% input.items %}", "task": "t.e", "input": {"v": "{% item %}"},
                             "tolerated_failures": 2}})
    w = Flaky({97, 98, 99})
    sim.worker("t.e", w)
    eid = sim.start("wf", {"items": list(range(100))}, id="fan-1")
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "FAILED" and "3 of 100" in d["error"]["message"]
    w.fixed = True
    out = sim.redrive(eid)
    assert sorted(out["steps"]) == ["each", "each[97]", "each[98]", "each[99]"]
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED"
    assert d["output"]["each"] == [{"v": i} for i in range(100)]
    assert {k: n for k, n in w.runs.items() if n != 1} == {97: 2, 98: 2, 99: 2}


def test_a_fan_out_with_concurrency_schedules_redriven_elements_first() -> None:
    sim = sim_with({"each": {"for": "{% input.items %}", "task": "t.e", "input": {"v": "{% item %}"},
                             "concurrency": 2}})
    w = Flaky({3})
    sim.worker("t.e", w)
    eid = sim.start("wf", {"items": list(range(10))}, id="fan-2")
    sim.run()
    first = sim.describe(eid)
    assert first["status"] == "FAILED"
    succeeded = {i for i in range(10) if first["steps"].get(f"each[{i}]", {}).get("status") == "SUCCEEDED"}
    assert succeeded and 3 not in succeeded
    w.fixed = True
    sim.redrive(eid)
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED" and d["output"]["each"] == [{"v": i} for i in range(10)]
    assert all(w.runs[i] == 1 for i in succeeded)  # succeeded elements never ran again
    assert all(w.runs[i] >= 1 for i in range(10)) and w.runs[3] == 2
    peak, live = 0, set()
    for e in sim.history(eid):
        if e["type"] == "StepScheduled":
            live.add(e["step"])
        elif e["type"] in ("StepSucceeded", "StepFailed", "StepCancelled"):
            live.discard(e["step"])
        peak = max(peak, len(live))
    assert peak <= 2  # the concurrency limit holds for redriven elements too


def parent_and_child() -> tuple[Any, dict[str, Flaky]]:
    sim = sim_with({
        "pre": {"task": "t.pre", "input": {"v": "pre"}},
        "kid": {"workflow": "kid", "input": {"v": "{% steps.pre.output.v %}"}},
        "post": {"task": "t.post", "input": {"v": "{% steps.kid.output.x.v %}"}},
    }, name="parent")
    sim.register({"orbit": 1, "name": "kid", "steps": {
        "ok": {"task": "t.ok", "input": {"v": "ok"}},
        "x": {"task": "t.x", "input": {"v": "{% input.v %}"}}}})
    w = {"pre": Flaky(set()), "post": Flaky(set()), "ok": Flaky(set()), "x": Flaky()}
    for name, f in w.items():
        sim.worker(f"t.{name}", f)
    return sim, w


def test_redriving_a_parent_redrives_its_failed_child() -> None:
    sim, w = parent_and_child()
    eid = sim.start("parent", {}, id="p-1")
    sim.run()
    assert sim.describe(eid)["status"] == "FAILED"
    kid = "p-1/kid"
    assert sim.describe(kid)["status"] == "FAILED"
    w["x"].fixed = True
    out = sim.redrive(eid)
    assert out["steps"] == ["kid"]
    sim.run()
    d, k = sim.describe(eid), sim.describe(kid)
    assert d["status"] == "COMPLETED" and k["status"] == "COMPLETED", (d, k)
    assert k["redrive_count"] == 1 and d["redrive_count"] == 1
    assert d["output"]["post"] == {"v": "pre"}
    assert w["pre"].runs["pre"] == 1 and w["ok"].runs["ok"] == 1  # neither parent nor child re-ran these
    assert w["x"].runs["pre"] == 2 and w["post"].runs["pre"] == 1
    assert [e["type"] for e in sim.history(kid)].count("ExecutionRedriven") == 1


def test_a_timed_out_execution_gets_a_new_deadline() -> None:
    sim = sim_with({"a": {"task": "t.a", "input": {"v": 1}},
                    "slow": {"task": "t.slow", "input": {"v": 2}, "after": ["a"]}}, timeout="1m")
    a = Flaky(set())
    sim.worker("t.a", a)
    from orbit.testing.simulator import hang, succeed

    sim.worker("t.slow", hang(), succeed({"v": 2}))
    eid = sim.start("wf", {}, id="t-1")
    sim.run()
    assert sim.describe(eid)["status"] == "TIMED_OUT"
    at = sim.clock.now_ms()
    sim.redrive(eid)
    redriven = next(e for e in sim.history(eid) if e["type"] == "ExecutionRedriven")
    assert redriven["deadline_ms"] == at + 60_000
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED" and a.runs[1] == 1 and d["output"]["slow"] == {"v": 2}


@pytest.mark.parametrize("status", ["RUNNING", "COMPLETED", "CANCELLED"])
def test_refused_for_executions_that_did_not_fail_and_nothing_is_written(status: str) -> None:
    from orbit.testing.simulator import hang, succeed

    sim = sim_with({"a": {"task": "t.a", "input": {}}})
    sim.worker("t.a", hang() if status != "COMPLETED" else succeed(1))
    eid = sim.start("wf", {}, id="s-1")
    sim.run_until_idle()
    if status == "CANCELLED":
        sim.cancel(eid)
        sim.run_until_idle()
    if status == "COMPLETED":
        sim.run()
    assert sim.describe(eid)["status"] == status
    before = sim.history(eid)
    with pytest.raises(RedriveRefused, match=f"is {status}: only FAILED or TIMED_OUT"):
        sim.redrive(eid)
    assert sim.history(eid) == before


def test_refused_once_compensation_ran() -> None:
    sim = sim_with({
        "pay": {"task": "t.pay", "input": {}, "compensate": {"task": "t.refund", "input": {}}},
        "ship": {"task": "t.ship", "input": {}, "after": ["pay"]},
    })
    from orbit.testing.simulator import fail, succeed

    sim.worker("t.pay", succeed(1))
    sim.worker("t.refund", succeed())
    sim.worker("t.ship", fail("NOPE", retryable=False))
    eid = sim.start("wf", {}, id="c-1")
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "FAILED" and d["compensation"] == "completed"
    before = sim.history(eid)
    with pytest.raises(RedriveRefused, match="already ran its compensation \\(pay\\)"):
        sim.redrive(eid)
    assert sim.history(eid) == before


def test_unknown_id_and_bad_request_id_write_nothing() -> None:
    sim, _ = chain()
    with pytest.raises(NotFound):
        sim.redrive("nope")
    with pytest.raises(NotFound):
        sim.store.load("nope")  # nothing was written under that id
    eid = sim.start("wf", {}, id="r-3")
    sim.run()
    with pytest.raises(ValidationError, match="request_id"):
        sim.redrive(eid, "")


def test_a_repeated_request_redrives_once() -> None:
    sim, w = chain()
    eid = sim.start("wf", {}, id="r-4")
    sim.run()
    w["b"].fixed = True
    first = sim.redrive(eid, "req-1")
    again = sim.redrive(eid, "req-1")  # the client retried: same answer, nothing new recorded
    assert first == again
    sim.run()
    assert sim.redrive(eid, "req-1")["redrive_count"] == 1  # long after, still the same answer
    assert _types(sim, eid).count("ExecutionRedriven") == 1
    with pytest.raises(RedriveRefused, match="is COMPLETED"):
        sim.redrive(eid, "req-2")


def test_two_redrives_racing_record_one_and_refuse_the_other() -> None:
    sim, w = chain()
    eid = sim.start("wf", {}, id="r-5")
    sim.run()
    w["b"].fixed = True
    # A second API process that loaded the FAILED state just before the first one committed.
    other = Engine(sim.store, sim.queues, sim.timers, None, sim.registry, sim.clock, sim.engine.ids)
    stale = sim.store.load(eid).fold()
    other.load_state = lambda _id: stale.copy()  # type: ignore[method-assign]
    other._cache[eid] = (stale.copy(), 0)
    sim.redrive(eid, "one")
    before = sim.history(eid)
    with pytest.raises(RedriveRefused, match="redriven by another request at the same time"):
        other.redrive(eid, "two")
    assert sim.history(eid) == before
    sim.run()
    assert sim.describe(eid)["status"] == "COMPLETED" and _types(sim, eid).count("ExecutionRedriven") == 1


def test_a_child_that_cannot_go_on_fails_its_redriven_parent_again_saying_why() -> None:
    from orbit.testing.simulator import fail, succeed

    sim = sim_with({"kid": {"workflow": "saga-kid", "input": {}}}, name="parent")
    sim.register({"orbit": 1, "name": "saga-kid", "steps": {
        "pay": {"task": "t.pay", "input": {}, "compensate": {"task": "t.refund", "input": {}}},
        "x": {"task": "t.x", "input": {}, "after": ["pay"]}}})
    sim.worker("t.pay", succeed(1))
    sim.worker("t.refund", succeed())
    sim.worker("t.x", fail("NOPE", retryable=False))
    eid = sim.start("parent", {}, id="pc-1")
    sim.run()
    assert sim.describe("pc-1/kid")["compensation"] == "completed"
    kid_history = sim.history("pc-1/kid")
    sim.redrive(eid)  # the parent itself compensated nothing: accepted
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "FAILED" and d["redrive_count"] == 1
    assert "not redriven" in d["error"]["message"] and "already ran its compensation" in d["error"]["message"]
    assert sim.history("pc-1/kid") == kid_history  # the child recorded nothing


def test_the_timeline_shows_the_redrive() -> None:
    from orbit.local.timeline import render

    sim, w = chain()
    eid = sim.start("wf", {}, id="r-tl")
    sim.run()
    w["b"].fixed = True
    sim.redrive(eid)
    sim.run()
    lines = render(sim.history(eid), sim.describe(eid)).splitlines()
    at = next(i for i, line in enumerate(lines) if "redriven (#1): b" in line)
    assert "FAILED" in lines[at - 1] and "COMPLETED" in lines[-1]
