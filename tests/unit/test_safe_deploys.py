"""Safe deploys: a run whose build is gone replays on the deployed build, switches or parks,
and un-parks by itself once compatible code is back (simulator, real engine)."""

from __future__ import annotations

import pytest
from code_harness import Harness
from orbit.errors import NotParked
from orbit.workflow import CodeRegistry, workflow

REG = CodeRegistry()


def echo(input, attempt):
    return {"echo": input}


# Three builds of one workflow: v1, v1 with a comment edited, v1 with its two steps reordered.
@workflow("deploy-wf", registry=REG)
def v1(ctx, input):
    a = ctx.step("a.first", {"n": 1})
    b = ctx.step("a.second", {"n": 2})
    got = ctx.wait_for("go")
    return [a, b, got]


@workflow("deploy-wf", registry=REG)
def v1_comment(ctx, input):
    # only this comment is new
    a = ctx.step("a.first", {"n": 1})
    b = ctx.step("a.second", {"n": 2})
    got = ctx.wait_for("go")
    return [a, b, got]


@workflow("deploy-wf", registry=REG)
def v2_reordered(ctx, input):
    b = ctx.step("a.second", {"n": 2})
    a = ctx.step("a.first", {"n": 1})
    got = ctx.wait_for("go")
    return [a, b, got]


def started() -> Harness:
    h = Harness(v1, workers={"a.first": echo, "a.second": echo})
    h.held.add("a.second")
    h.start("deploy-wf", {})
    assert h.describe()["steps"]["1.a.first"]["status"] == "SUCCEEDED"
    return h


def test_a_deploy_that_only_edits_a_comment_switches_the_build_and_the_run_goes_on():
    h = started()
    h.deploy(v1_comment)
    h.release("a.second")
    h.signal("go", "yes")
    d = h.describe()
    assert d["status"] == "COMPLETED" and d["output"][2] == "yes"
    switch = [e for e in h.history() if e["type"] == "BuildSwitched"]
    assert [(e["from_build"], e["to_build"]) for e in switch] == [(v1.build, v1_comment.build)]
    assert d["build"] == v1_comment.build and "ExecutionParked" not in h.types()
    assert [t for t, _ in h.calls] == ["a.first", "a.second"]


def test_a_reordering_deploy_parks_with_the_divergence_and_the_compatible_code_unparks_it():
    h = started()
    h.deploy(v2_reordered)
    h.release("a.second")  # its result is recorded while parked
    d = h.describe()
    assert d["status"] == "RUNNING" and d["parked"]["code"] == "BUILD_MISMATCH"
    details = d["parked"]["details"]
    assert details["pinned"] == v1.build and details["deployed"] == v2_reordered.build
    assert details["recorded"]["task"] == "a.first" and details["requested"]["task"] == "a.second"
    assert "durable call #1" in d["parked"]["message"]
    h.signal("go", "kept")  # arrives while parked: kept for after the un-park
    assert h.describe()["parked"] is not None
    h.deploy(v1_comment)  # compatible code comes back: nothing arrives, the retry timer un-parks it
    h.run()
    d = h.describe()
    assert d["status"] == "COMPLETED", d
    assert d["output"] == [{"echo": {"n": 1}}, {"echo": {"n": 2}}, "kept"]
    assert [t for t, _ in h.calls] == ["a.first", "a.second"]  # each step ran once
    types = h.types()
    assert types.index("ExecutionUnparked") > types.index("SignalReceived") > types.index("ExecutionParked")
    assert "BuildSwitched" in types


def test_a_parked_run_retries_on_a_backing_off_timer_and_records_each_try():
    h = started()
    h.deploy(v2_reordered)
    h.release("a.second")
    first = [e for e in h.history() if e["type"] == "ExecutionParked"][0]
    assert first["retry_at_ms"] == first["timestamp_ms"] + 60_000
    h.advance(60_000)
    h.run_until_idle()
    h.advance(120_000)
    h.run_until_idle()
    parks = [e for e in h.history() if e["type"] == "ExecutionParked"]
    assert [p["retry_at_ms"] - p["timestamp_ms"] for p in parks] == [60_000, 120_000, 240_000]
    assert h.describe()["parked"] is not None


def test_unpark_tries_at_once_and_is_refused_for_a_run_that_is_not_parked():
    h = started()
    with pytest.raises(NotParked, match="is not parked"):
        h.unpark("ex-1")
    h.deploy(v2_reordered)
    h.release("a.second")
    h.unpark("ex-1")  # still diverges: recorded again, the retry starts over at one minute
    h.run_until_idle()
    parks = [e for e in h.history() if e["type"] == "ExecutionParked"]
    assert len(parks) == 2 and parks[-1]["retry_at_ms"] - parks[-1]["timestamp_ms"] == 60_000
    h.deploy(v1)
    h.unpark("ex-1")
    h.run_until_idle()
    assert h.describe()["parked"] is None and "ExecutionUnparked" in h.types()
    assert "BuildSwitched" not in h.types()  # back on the pinned build itself


@workflow("deploy-fenced", build="v1", registry=REG)
def fenced(ctx, input):
    return ctx.step("a.first", {"n": 1})


@workflow("deploy-fenced", build="v2", registry=REG)
def fenced_v2(ctx, input):
    return ctx.step("a.first", {"n": 1})


def test_an_explicit_build_is_an_exact_fence_until_that_build_is_deployed_again():
    h = Harness(fenced, workers={"a.first": echo})
    h.held.add("a.first")
    h.start("deploy-fenced", {})
    h.deploy(fenced_v2)  # replays cleanly, but the run is pinned exactly
    h.release("a.first")
    d = h.describe()
    assert d["parked"]["code"] == "BUILD_MISMATCH" and "explicit build=" in d["parked"]["message"]
    h.deploy(fenced, fenced_v2)
    h.run()
    assert h.describe()["status"] == "COMPLETED" and "BuildSwitched" not in h.types()


@workflow("deploy-values", registry=REG)
def values_v1(ctx, input):
    token = ctx.hook_token("approve")
    ctx.step("a.first", {"token": token, "n": 1}, timeout="30s")
    return ctx.step("a.second", {}, timeout="30s")


@workflow("deploy-values", registry=REG)
def values_v2(ctx, input):
    token = ctx.hook_token("approve")
    ctx.step("a.first", {"token": token, "n": 2}, timeout="1m")
    return ctx.step("a.second", {}, timeout="30s")


def test_the_same_call_with_another_input_or_timeout_diverges_and_hook_tokens_are_redacted():
    h = Harness(values_v1, workers={"a.first": echo, "a.second": echo})
    h.held.add("a.second")
    h.start("deploy-values", {})
    h.deploy(values_v2)
    h.release("a.second")
    parked = h.describe()["parked"]
    differs = parked["details"]["differs"]
    assert set(differs) == {"input", "timeout_ms"}
    assert differs["timeout_ms"] == {"recorded": 30_000, "requested": 60_000}
    token = h.state().hooks["approve"]["token"]
    assert token not in str(parked) and "<hook token>" in differs["input"]["recorded"]["preview"]
    assert "input (sha256 " in parked["message"] and "timeout_ms (30000 -> 60000)" in parked["message"]


# Patching: a step added before a point that running executions already passed.
@workflow("deploy-patch", registry=REG)
def before_patch(ctx, input):
    ctx.step("a.first", {})
    got = ctx.wait_for("go")
    ctx.step("a.last", got)
    return "done"


@workflow("deploy-patch", registry=REG)
def with_patch(ctx, input):
    ctx.step("a.first", {})
    if ctx.patched("add-extra"):
        ctx.step("a.extra", {})
    got = ctx.wait_for("go")
    ctx.step("a.last", got)
    return "done"


@workflow("deploy-patch", registry=REG)
def patch_deprecated(ctx, input):
    ctx.step("a.first", {})
    ctx.deprecate_patch("add-extra")
    ctx.step("a.extra", {})
    got = ctx.wait_for("go")
    ctx.step("a.last", got)
    return "done"


def test_a_patch_is_skipped_by_runs_past_it_and_taken_by_new_runs_then_deprecated():
    workers = {"a.first": echo, "a.extra": echo, "a.last": echo}
    h = Harness(before_patch, workers=workers)
    h.start("deploy-patch", {}, id="old")
    h.deploy(with_patch)
    h.start("deploy-patch", {}, id="new")
    assert "PatchMarked" in h.types("new") and "PatchMarked" not in h.types("old")
    h.signal("go", 1, id="old")
    assert h.describe("old")["status"] == "COMPLETED"
    assert list(h.describe("old")["steps"]) == ["1.a.first", "2.wait_for(go)", "3.a.last"]
    assert "BuildSwitched" in h.types("old")

    h.start("deploy-patch", {}, id="old2")
    h.deploy(before_patch)  # a roll-back: old2 (marker, extra step) cannot replay on it
    h.start("deploy-patch", {}, id="older")  # started on the old code: passes the point unmarked
    h.deploy(patch_deprecated)
    h.signal("go", 2, id="old2")
    assert h.describe("old2")["status"] == "COMPLETED"
    assert list(h.describe("old2")["steps"]) == ["1.a.first", "2.a.extra", "3.wait_for(go)", "4.a.last"]
    h.signal("go", 3, id="older")  # took the old path: deprecate_patch parks it instead of going on
    parked = h.describe("older")["parked"]
    assert parked is not None and "deprecate_patch" in parked["message"]
    h.deploy(with_patch)
    h.unpark("older")
    h.run()
    assert h.describe("older")["status"] == "COMPLETED"
    assert [t for t, i in h.calls].count("a.extra") == 2  # new and old2 only


def test_the_retries_stop_after_a_week_so_a_parked_run_is_left_alone():
    h = started()
    h.deploy(v2_reordered)
    h.release("a.second")
    h.run()  # finishes: the retry timer stops after 7 days
    parks = [e for e in h.history() if e["type"] == "ExecutionParked"]
    assert 150 < len(parks) < 200 and "retry_at_ms" not in parks[-1]
    assert parks[-1]["timestamp_ms"] - parks[0]["timestamp_ms"] >= 7 * 86_400_000
    h.deploy(v1)
    h.signal("go", "late")  # a message still tries it: clean now, it un-parks and completes
    assert h.describe()["status"] == "COMPLETED"
