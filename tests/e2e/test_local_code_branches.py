"""Branches, races, scopes, children and wait_for_condition end to end on the local stack
(real handlers on moto, virtual time): the scenarios of issue 14."""

from __future__ import annotations

from pathlib import Path

import orbit
import pytest
from orbit.local import LocalStack

WORKERS = str(Path(__file__).resolve().parent / "fixtures" / "branch_workers.py")


@orbit.workflow("e2e-br-par")
def par(ctx, input):
    return ctx.parallel(lambda c: c.step("br.echo", {"x": 1}),
                        lambda c: (c.sleep("1h"), "slept")[1],
                        lambda c: c.wait_for("go"))


@orbit.workflow("e2e-br-map")
def mapped(ctx, items):
    def one(c, item, i):
        c.sleep("10m")
        return c.step("br.echo", {"item": item, "i": i})
    return ctx.map(items, one, concurrency=2)


@orbit.workflow("e2e-br-policies")
def policies(ctx, input):
    try:
        ctx.parallel(lambda c: c.sleep("1d"), lambda c: c.step("br.boom", 1), fail_fast=True)
    except orbit.BranchesFailed as e:
        fast = {k: v.code for k, v in e.errors.items()}
    tolerated = ctx.map([1, 2, 3], lambda c, x: c.step("br.boom" if x == 2 else "br.echo", x),
                        tolerated_failures=1)
    return {"fast": fast, "tolerated": tolerated}


@orbit.workflow("e2e-br-race")
def race(ctx, input):
    return list(ctx.race(signal=lambda c: c.wait_for("go"), timer=lambda c: c.sleep("1h")))


@orbit.workflow("e2e-br-scope")
def scope(ctx, input):
    with ctx.scope() as s:
        first = ctx.step("br.echo", 1)
        ctx.parallel(lambda c: c.wait_for("never"), lambda c: (c.sleep("5m"), s.cancel("enough")))
        ctx.step("br.echo", "not reached")
    return {"first": first, "after": ctx.step("br.echo", "after"), "cancelled": s.cancelled}


@orbit.workflow("e2e-br-shield")
def shield(ctx, input):
    try:
        ctx.wait_for("never")
    except orbit.Cancelled:
        with ctx.scope(shield=True):
            ctx.parallel(lambda c: c.step("br.echo", "release-a"), lambda c: c.sleep("30s"))
            ctx.step("br.echo", "release-b")
        raise


@orbit.workflow("e2e-br-kid")
def kid(ctx, n):
    ctx.sleep("1d")
    return n


@orbit.workflow("e2e-br-ten")
def ten(ctx, input):
    return ctx.children([{"workflow": "e2e-br-kid", "input": i,
                          "parent_policy": "abandon" if i == 3 else "cancel"} for i in range(10)])


@orbit.workflow("e2e-br-cond")
def cond(ctx, input):
    return ctx.wait_for_condition("br.count", {"n": 0}, until=lambda s: s["n"] > 99, delay="1m",
                                  backoff=2, max_attempts=3)


@pytest.fixture(scope="module")
def stack():
    with LocalStack(mode="inprocess", workers=[WORKERS]) as st:
        for wf in (par, mapped, policies, race, scope, shield, kid, ten, cond):
            st.register(wf)
        yield st


def test_parallel_branches_hold_a_step_a_sleep_and_a_signal_wait(stack):
    eid = stack.start("e2e-br-par", {})
    stack.run_until_idle()
    steps = stack.describe(eid)["steps"]
    assert steps["1.parallel()/2/1.wait_for(go)"]["status"] == "WAITING"
    assert steps["1.parallel()/2/1.wait_for(go)"]["parent"] == "1.parallel()"
    stack.advance(3600 + 5)
    stack.signal(eid, "go", {"ok": True})
    desc = stack.run_until_done(eid)
    assert desc["status"] == "COMPLETED" and desc["output"] == [{"x": 1}, "slept", {"ok": True}]


def test_map_over_branches_sleeping_then_stepping_two_at_a_time(stack):
    eid = stack.start("e2e-br-map", ["a", "b", "c", "d"])
    desc = stack.run_until_done(eid)
    assert desc["output"] == [{"item": x, "i": i} for i, x in enumerate("abcd")]
    timers = sorted(e["timestamp_ms"] for e in stack.history(eid) if e["type"] == "TimerStarted")
    assert timers[0] == timers[1] < timers[2] == timers[3]  # the last two waited for a slot


def test_fail_fast_and_tolerated_failures(stack):
    eid = stack.start("e2e-br-policies", {})
    desc = stack.run_until_done(eid)
    assert desc["output"] == {"fast": {"1": "BOOM"}, "tolerated": [1, None, 3]}, desc
    assert desc["steps"]["1.parallel()/0/1.sleep()"]["status"] == "CANCELLED"


def test_race_the_signal_beats_the_timer(stack):
    eid = stack.start("e2e-br-race", {})
    stack.run_until_idle()
    stack.signal(eid, "go", "now")
    desc = stack.run_until_done(eid)
    assert desc["output"] == ["signal", "now"]
    assert desc["steps"]["1.race()/timer/1.sleep()"]["status"] == "CANCELLED"


def test_race_the_timer_beats_silence(stack):
    eid = stack.start("e2e-br-race", {})
    desc = stack.run_until_done(eid)
    assert desc["output"] == ["timer", None]
    assert desc["steps"]["1.race()/signal/1.wait_for(go)"]["status"] == "CANCELLED"


def test_a_scope_cancelled_halfway_through(stack):
    eid = stack.start("e2e-br-scope", {})
    desc = stack.run_until_done(eid)
    assert desc["output"] == {"first": 1, "after": "after", "cancelled": True}
    assert desc["steps"]["1.scope()/0/2.parallel()/0/1.wait_for(never)"]["status"] == "CANCELLED"


def test_a_shielded_clean_up_during_a_workflow_cancel(stack):
    eid = stack.start("e2e-br-shield", {})
    stack.run_until_idle()
    stack.cancel(eid, "customer cancelled")
    desc = stack.run_until_done(eid)
    assert desc["status"] == "CANCELLED"
    assert desc["steps"]["2.shield()/0/2.br.echo"]["output"] == "release-b"
    assert desc["steps"]["2.shield()/0/1.parallel()/1/1.sleep()"]["status"] == "SUCCEEDED"


def test_ten_children_at_once_one_abandoned_then_the_parent_cancelled(stack):
    eid = stack.start("e2e-br-ten", {})
    stack.run_until_idle()
    kids = [f"{eid}/1.children()/{i}/1.child(e2e-br-kid{', abandon' if i == 3 else ''})" for i in range(10)]
    assert all(stack.describe(k)["status"] == "RUNNING" for k in kids)
    stack.cancel(eid, "stop")
    stack.run_until_idle()
    assert stack.describe(eid)["status"] == "CANCELLED"
    assert [stack.describe(k)["status"] for k in kids] == ["CANCELLED"] * 3 + ["RUNNING"] + ["CANCELLED"] * 6
    assert stack.run_until_done(kids[3])["output"] == 3  # the abandoned child ran on


def test_wait_for_condition_runs_out_of_attempts(stack):
    eid = stack.start("e2e-br-cond", {})
    desc = stack.run_until_done(eid)
    assert desc["status"] == "FAILED" and desc["error"]["code"] == "CONDITION_NOT_MET"
    assert "not met after 3 attempt(s)" in desc["error"]["message"]
    sleeps = [k for k in desc["steps"] if k.endswith("sleep()")]
    assert sleeps == ["1.condition()/0/2.sleep()", "1.condition()/0/4.sleep()"]
