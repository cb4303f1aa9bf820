"""Deploys rehearsed on the local stack (real handlers, moto, virtual time): a comment edit
switches the build, a reordering parks, compatible code un-parks; continue-as-new keeps signals."""

from __future__ import annotations

import orbit
import pytest
from orbit.local import LocalStack
from orbit.worker import task
from orbit.workflow import REGISTRY

CALLS: list[str] = []


@task("deploye2e.first")
def first(input, ctx):
    CALLS.append("first")
    return {"first": input}


@task("deploye2e.second")
def second(input, ctx):
    CALLS.append("second")
    return {"second": input}


def v1(ctx, input):
    a = ctx.step("deploye2e.first", input)
    go = ctx.wait_for("go")
    b = ctx.step("deploye2e.second", go)
    return [a, b]


def v1_comment(ctx, input):
    # a comment is the only change
    a = ctx.step("deploye2e.first", input)
    go = ctx.wait_for("go")
    b = ctx.step("deploye2e.second", go)
    return [a, b]


def v2_reordered(ctx, input):
    b = ctx.step("deploye2e.second", input)
    go = ctx.wait_for("go")
    a = ctx.step("deploye2e.first", go)
    return [a, b]


def _unregistered(fn):
    """A build of `deploye2e` that no registry holds yet (deploy() hands it to the deciders)."""
    return orbit.workflow("deploye2e", registry=_registry())(fn)


@pytest.fixture(scope="module")
def stack():
    held = REGISTRY.all()
    with LocalStack(mode="inprocess") as st:
        yield st
    REGISTRY.replace(held)  # other test modules' code workflows


def test_a_comment_edit_deploy_switches_the_build_and_the_run_completes(stack):
    old, new = _unregistered(v1), _unregistered(v1_comment)
    stack.deploy(old)
    CALLS.clear()
    eid = stack.start("deploye2e", {"n": 1})
    stack.run_until_idle()
    stack.deploy(new)
    stack.signal(eid, "go", "now")
    d = stack.run_until_done(eid)
    assert d["status"] == "COMPLETED" and d["build"] == new.build
    switched = [e for e in stack.history(eid) if e["type"] == "BuildSwitched"]
    assert [(e["from_build"], e["to_build"]) for e in switched] == [(old.build, new.build)]
    assert CALLS == ["first", "second"]


def test_a_reordering_deploy_parks_and_deploying_compatible_code_back_unparks_it(stack):
    old, bad = _unregistered(v1), _unregistered(v2_reordered)
    stack.deploy(old)
    CALLS.clear()
    eid = stack.start("deploye2e", {"n": 2})
    stack.run_until_idle()
    stack.deploy(bad)
    stack.signal(eid, "go", "kept")  # handled while parked: recorded, kept for later
    stack.run_until_idle()
    d = stack.describe(eid)
    assert d["status"] == "RUNNING" and d["parked"]["code"] == "BUILD_MISMATCH"
    assert d["parked"]["details"]["recorded"]["task"] == "deploye2e.first"
    assert d["parked"]["details"]["requested"]["task"] == "deploye2e.second"
    stack.deploy(_unregistered(v1_comment))
    stack.advance(61)  # the park's retry timer: it un-parks by itself
    d = stack.run_until_done(eid)
    assert d["status"] == "COMPLETED" and d["output"] == [{"first": {"n": 2}}, {"second": "kept"}]
    assert CALLS == ["first", "second"]  # each step ran once
    types = [e["type"] for e in stack.history(eid)]
    # the signal was the first message after the deploy: recorded, then the replay parked
    assert types.index("SignalReceived") < types.index("ExecutionParked") < types.index("ExecutionUnparked")


def test_unpark_on_the_local_stack_tries_at_once(stack):
    stack.deploy(_unregistered(v1))
    eid = stack.start("deploye2e", {"n": 3})
    stack.run_until_idle()
    stack.deploy(_unregistered(v2_reordered))
    stack.signal(eid, "go", 1)
    stack.run_until_idle()
    assert stack.describe(eid)["parked"] is not None
    stack.deploy(_unregistered(v1))
    stack.unpark(eid)
    stack.run_until_idle()
    d = stack.describe(eid)
    assert d["parked"] is None and d["status"] == "COMPLETED"
    assert "BuildSwitched" not in [e["type"] for e in stack.history(eid)]  # the pinned build is back


def sleeper(ctx, input):
    if input == "first":
        ctx.sleep("1h")
        ctx.continue_as_new("second")
    return ctx.wait_for("go", timeout="1d")


def test_a_signal_sent_before_continue_as_new_is_consumed_by_the_new_run(stack):
    stack.deploy(orbit.workflow("deploye2e-can", registry=_registry())(sleeper))
    eid = stack.start("deploye2e-can", "first")
    stack.run_until_idle()
    stack.signal(eid, "go", {"early": True})
    stack.run_until_done(eid)  # continues as new after its sleep
    d = stack.run_until_done(f"{eid}~1")
    assert d["status"] == "COMPLETED" and d["output"] == {"early": True}
    assert d["continued_from"] == eid and stack.describe(eid)["continued_to"] == f"{eid}~1"


def _registry():
    from orbit.workflow import CodeRegistry

    return CodeRegistry()


def patched_v2(ctx, input):
    a = ctx.step("deploye2e.first", input)
    if ctx.patched("extra-second"):
        ctx.step("deploye2e.second", "patched")
    go = ctx.wait_for("go")
    b = ctx.step("deploye2e.second", go)
    return [a, b]


def test_a_patch_before_a_point_old_runs_passed_is_skipped_by_them_and_taken_by_new_runs(stack):
    stack.deploy(_unregistered(v1))
    old = stack.start("deploye2e", {"n": 4})
    stack.run_until_idle()
    stack.deploy(_unregistered(patched_v2))
    new = stack.start("deploye2e", {"n": 5})
    stack.run_until_idle()
    CALLS.clear()
    for eid in (old, new):
        stack.signal(eid, "go", eid)
        assert stack.run_until_done(eid)["status"] == "COMPLETED"
    assert list(stack.describe(old)["steps"]) == ["1.deploye2e.first", "2.wait_for(go)", "3.deploye2e.second"]
    assert list(stack.describe(new)["steps"]) == ["1.deploye2e.first", "2.deploye2e.second",
                                                  "3.wait_for(go)", "4.deploye2e.second"]
    assert "PatchMarked" in [e["type"] for e in stack.history(new)]
    assert "PatchMarked" not in [e["type"] for e in stack.history(old)]
    assert CALLS == ["second", "second"]  # after the signal: each run's last step, once
