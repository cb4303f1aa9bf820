"""Branches of code workflows on the simulator: ctx.parallel / ctx.map over functions, ctx.race.

Every scenario also replays its final history cold, prefix by prefix (`replay` from the golden
test): a replay asks only for what history records and ends as the execution did.
"""

from __future__ import annotations

import orbit
import pytest
from branch_helpers import _clean, echo
from code_harness import Harness
from orbit.core.history.events import TaskError
from orbit.workflow import CodeRegistry
from test_code_golden import replay


def _wf(name, fn, reg=None):
    return orbit.workflow(name, registry=reg or CodeRegistry())(fn)


def boom(input, attempt):
    raise TaskError("BOOM", f"no {input}", retryable=False)


def test_parallel_branches_hold_a_step_a_sleep_and_a_signal_wait():
    def body(ctx, input):
        return ctx.parallel(lambda c: c.step("t.echo", {"x": 1}),
                            lambda c: (c.sleep("5m"), "slept")[1],
                            lambda c: c.wait_for("go"))
    wf = _wf("par", body)
    h = Harness(wf, workers={"t.echo": echo})
    h.start("par")
    assert sorted(h.state().units) == ["1.parallel()", "1.parallel()/0/1.t.echo",
                                       "1.parallel()/1/1.sleep()", "1.parallel()/2/1.wait_for(go)"]
    h.advance(5 * 60_000)
    h.run_until_idle()
    assert h.state().status == "RUNNING"
    h.signal("go", {"ok": True})
    st = h.state()
    assert st.status == "COMPLETED" and st.output == [{"x": 1}, "slept", {"ok": True}]
    steps = h.describe("ex-1")["steps"]
    assert steps["1.parallel()/2/1.wait_for(go)"]["parent"] == "1.parallel()"
    assert "parent" not in steps["1.parallel()"]
    _clean(h, wf)


def test_map_over_branches_each_sleeping_then_stepping_two_at_a_time():
    def body(ctx, items):
        def one(c, item, i):
            c.sleep("1m")
            return c.step("t.echo", {"item": item, "i": i})
        return ctx.map(items, one, concurrency=2)
    wf = _wf("mapb", body)
    h = Harness(wf, workers={"t.echo": echo})
    h.start("mapb", ["a", "b", "c", "d", "e"])
    h.run()
    st = h.state()
    assert st.output == [{"item": x, "i": i} for i, x in enumerate("abcde")]
    # never more than two branches live; each later branch starts when one ends
    spans: dict[str, list[int]] = {}
    for e in h.history("ex-1"):
        step = e.get("step", "")
        if step.startswith("1.map()/"):
            spans.setdefault(step.split("/")[1], []).append(e["timestamp_ms"])
    live = [(min(t), max(t)) for t in spans.values()]
    for t in {s for s, _ in live}:
        assert sum(1 for s, end in live if s <= t < end) <= 2
    assert len(live) == 5 and all(s < end for s, end in live)  # every branch ran, slept, then stepped
    starts = sorted(s for s, _ in live)
    assert starts[0] == starts[1] < starts[2] == starts[3] < starts[4]
    ends = {end for _, end in live}
    assert {starts[2], starts[4]} <= ends  # a later branch starts at the time an earlier one ends
    _clean(h, wf)


def test_fail_fast_cancels_the_branches_still_running():
    def body(ctx, input):
        try:
            ctx.parallel(lambda c: c.step("t.slow", 1), lambda c: c.step("t.boom", 2), fail_fast=True)
        except orbit.BranchesFailed as e:
            return {"code": e.code, "errors": {k: v.code for k, v in e.errors.items()}}
    wf = _wf("ff", body)
    h = Harness(wf, workers={"t.slow": echo, "t.boom": boom})
    h.held.add("t.slow")
    h.start("ff")
    st = h.state()
    assert st.status == "COMPLETED", st.error
    assert st.output == {"code": "BRANCHES_FAILED", "errors": {"1": "BOOM"}}
    assert st.units["1.parallel()/0/1.t.slow"].status == "CANCELLED"
    assert [c["unit"] for c in h.cancelled_tasks] == ["1.parallel()/0/1.t.slow"]
    _clean(h, wf)


def test_tolerated_failures_give_none_or_the_error_in_place():
    def body(ctx, items):
        plain = ctx.map(items, lambda c, x: c.step("t.boom" if x == 2 else "t.echo", x), tolerated_failures=1)
        errs = ctx.map(items, lambda c, x: c.step("t.boom" if x == 2 else "t.echo", x),
                       tolerated_failure_percentage=25, return_exceptions=True)
        return {"plain": plain, "errs": [e.code if isinstance(e, orbit.StepFailed) else e for e in errs]}
    wf = _wf("tol", body)
    h = Harness(wf, workers={"t.echo": echo, "t.boom": boom})
    h.start("tol", [1, 2, 3, 4])
    st = h.state()
    assert st.output == {"plain": [1, None, 3, 4], "errs": [1, "BOOM", 3, 4]}, st.error
    _clean(h, wf)


def test_beyond_tolerance_the_group_fails_and_the_workflow_with_it():
    def body(ctx, items):
        return ctx.map(items, lambda c, x: c.step("t.boom" if x % 2 else "t.echo", x), tolerated_failures=1)
    wf = _wf("tol2", body)
    h = Harness(wf, workers={"t.echo": echo, "t.boom": boom})
    h.start("tol2", [1, 2, 3, 4])
    st = h.state()
    assert st.status == "FAILED" and st.error.code == "BRANCHES_FAILED"
    assert "2 of 4 branches" in st.error.message and "BOOM" in st.error.message
    _clean(h, wf)


def test_all_waits_for_every_branch_then_raises_one_error_with_all():
    def body(ctx, input):
        try:
            ctx.parallel(lambda c: c.step("t.boom", "a"), lambda c: c.step("t.echo", "b"),
                         lambda c: c.step("t.boom", "c"))
        except orbit.BranchesFailed as e:
            return {"results": e.results, "errors": sorted(e.errors)}
    wf = _wf("all", body)
    h = Harness(wf, workers={"t.echo": echo, "t.boom": boom})
    h.start("all")
    assert h.state().output == {"results": [None, "b", None], "errors": [0, 2]}
    _clean(h, wf)


def test_min_successful_ends_early():
    def body(ctx, input):
        return ctx.parallel(lambda c: c.step("t.echo", 1), lambda c: c.step("t.echo", 2),
                            lambda c: c.step("t.slow", 3), min_successful=2)
    wf = _wf("mins", body)
    h = Harness(wf, workers={"t.echo": echo, "t.slow": echo})
    h.held.add("t.slow")
    h.start("mins")
    st = h.state()
    assert st.output == [1, 2, None]
    assert st.units["1.parallel()/2/1.t.slow"].status == "CANCELLED"
    _clean(h, wf)


def test_race_signal_beats_the_timer():
    def body(ctx, input):
        return list(ctx.race(signal=lambda c: c.wait_for("go"), timer=lambda c: c.sleep("1h")))
    wf = _wf("race1", body)
    h = Harness(wf)
    h.start("race1")
    h.advance(60_000)
    h.signal("go", "yes")
    st = h.state()
    assert st.output == ["signal", "yes"]
    assert st.units["1.race()/timer/1.sleep()"].status == "CANCELLED"
    assert any(e["type"] == "StepCancelled" and e["step"] == "1.race()/timer/1.sleep()"
               for e in h.history("ex-1"))
    _clean(h, wf)


def test_race_timer_beats_silence_and_a_late_signal_is_not_taken():
    def body(ctx, input):
        return list(ctx.race(signal=lambda c: c.wait_for("go"), timer=lambda c: c.sleep("1h")))
    wf = _wf("race2", body)
    h = Harness(wf)
    h.start("race2")
    h.run()
    st = h.state()
    assert st.output == ["timer", None]
    assert st.units["1.race()/signal/1.wait_for(go)"].status == "CANCELLED"
    _clean(h, wf)


def test_race_the_losing_steps_worker_is_told_to_stop():
    def body(ctx, input):
        return list(ctx.race(work=lambda c: c.step("t.slow", 1), timer=lambda c: c.sleep("10s")))
    wf = _wf("race3", body)
    h = Harness(wf, workers={"t.slow": echo})
    h.held.add("t.slow")
    h.start("race3")
    h.run()
    st = h.state()
    assert st.output == ["timer", None]
    assert [c["unit"] for c in h.cancelled_tasks] == ["1.race()/work/1.t.slow"]
    h.release("t.slow")  # its late answer changes nothing
    assert h.state().output == ["timer", None]
    _clean(h, wf)


def test_race_of_steps_and_a_failing_first_branch():
    def body(ctx, input):
        try:
            return list(ctx.race(a=("t.boom", 1), b=orbit.Step("t.slow", 2)))
        except orbit.BranchesFailed as e:
            return sorted(e.errors)
    wf = _wf("race4", body)
    h = Harness(wf, workers={"t.boom": boom, "t.slow": echo})
    h.held.add("t.slow")
    h.start("race4")
    assert h.state().output == ["a"]
    _clean(h, wf)


def test_nested_groups_children_and_timers_inside_branches():
    kid = _wf("kid", lambda ctx, x: ctx.step("t.echo", x * 10))
    def body(ctx, input):
        def inner(c):
            return c.parallel(lambda d: d.step("t.echo", "deep"), lambda d: (d.sleep("1m"), d.now_ms())[1])
        return ctx.parallel(inner, lambda c: c.child("kid", 4), lambda c: c.map("t.echo", [1, 2]))
    reg = CodeRegistry()
    reg.register(kid)
    wf = _wf("nest", body, reg)
    h = Harness(wf, kid, workers={"t.echo": echo})
    h.start("nest")
    h.run()
    st = h.state()
    start = st.created_at_ms
    assert st.output == [["deep", start + 60_000], 40, [1, 2]], st.error
    assert "1.parallel()/0/1.parallel()/1/1.sleep()" in st.units
    assert "1.parallel()/1/1.child(kid)" in st.units and "1.parallel()/2/1.t.echo[1]" in st.units
    _clean(h, wf)


def test_branches_get_their_own_clock_and_random_draws():
    def body(ctx, input):
        return ctx.map([0, 1, 2], lambda c, i: (c.sleep(f"{i + 1}m"), [c.now_ms(), c.uuid()])[1])
    wf = _wf("clock", body)
    h = Harness(wf)
    h.start("clock")
    h.run()
    out = h.state().output
    start = h.state().created_at_ms
    assert [o[0] - start for o in out] == [60_000, 120_000, 180_000]
    assert len({o[1] for o in out}) == 3
    _clean(h, wf)


def test_a_changed_branch_is_caught_on_replay():
    def body(ctx, input):
        return ctx.parallel(lambda c: c.step("t.echo", 1), lambda c: c.step("t.echo", 2))
    wf = _wf("chg", body)
    h = Harness(wf, workers={"t.echo": echo})
    h.held.add("t.echo")
    h.start("chg")
    changed = _wf("chg", lambda ctx, input: ctx.parallel(lambda c: c.step("t.echo", 1),
                                                         lambda c: c.step("t.other", 2)))
    problems = replay(changed, h.history("ex-1"))
    diverged = [p for p in problems if "non-deterministic replay" in p]
    assert diverged and "task(t.echo) as unit '1.parallel()/1/1.t.echo'" in diverged[0]
    assert "task(t.other)" in diverged[0]


def test_bad_options_are_clear_errors():
    def body(ctx, input):
        return ctx.parallel(lambda c: 1, min_successful=5)
    wf = _wf("bad", body)
    h = Harness(wf)
    h.start("bad")
    st = h.state()
    assert st.status == "FAILED" and "min_successful must be between 1 and the 1 branches" in st.error.message


@pytest.mark.parametrize("items", [[], [1]])
def test_empty_and_pure_branches(items):
    wf = _wf("pure", lambda ctx, xs: [ctx.map(xs, lambda c, x: x * 2), ctx.parallel()])
    h = Harness(wf)
    h.start("pure", items)
    assert h.state().output == [[x * 2 for x in items], []]
    _clean(h, wf)


@pytest.mark.parametrize("cache", [True, False], ids=["warm", "cold"])
def test_compensations_declared_in_branches_run_when_the_workflow_fails(cache):
    from orbit.service.replay_host import default_runtime

    def body(ctx, input):
        ctx.parallel(lambda c: c.step("t.echo", "a", compensate=("t.undo", "a")),
                     lambda c: c.step("t.echo", "b", compensate=("t.undo", "b")))
        ctx.step("t.boom", 1)
    wf = _wf("saga-br", body)
    rt = default_runtime()
    size, rt.cache_size = rt.cache_size, (rt.cache_size if cache else 0)
    try:
        h = Harness(wf, workers={"t.echo": echo, "t.boom": boom, "t.undo": echo})
        h.start("saga-br")
        h.run()
    finally:
        rt.cache_size = size
    st = h.state()
    assert st.status == "FAILED" and st.compensation == "completed", (st.compensation, st.error)
    assert sorted(i for t, i in h.calls if t == "t.undo") == ["a", "b"]


def test_the_deploy_check_replays_a_branch_history_and_catches_a_changed_branch():
    import json
    from pathlib import Path

    from orbit.testing.replay import ReplayDiverged
    from orbit.testing.replay import replay as check
    from test_code_golden import _workflow

    body = json.loads((Path(__file__).resolve().parents[1] / "golden" / "code" / "branches.json").read_text())
    wf = _workflow(body["workflow"])
    check(body["history"], wf)  # the recorded run replays on this code
    running = [e for e in body["history"] if e["type"] != "WorkflowCompleted"]
    running = running[: next(i for i, e in enumerate(running) if e["type"] == "TimerFired")]
    for e in running:
        if e.get("step") == "1.parallel()/1/1.sleep()":
            e["fire_at_ms"] += 1000  # the branch slept for another time
    with pytest.raises(ReplayDiverged, match=r"1\.parallel\(\)/1/1\.sleep\(\)"):
        check(running, wf)


def test_a_branch_that_uses_the_outer_ctx_gets_a_clear_error():
    def body(ctx, input):
        try:
            ctx.parallel(lambda c: ctx.step("t.echo", 1))
        except orbit.BranchesFailed as e:
            return e.errors[0].message
    wf = _wf("outer", body)
    h = Harness(wf, workers={"t.echo": echo})
    h.start("outer")
    assert "must use the branch's own ctx" in h.state().output


def test_a_branch_waiting_on_no_unit_is_resumed_at_the_next_decision():
    def body(ctx, input):
        def hooked(c):
            c.step("t.echo", 1)
            token = c.hook_token("h", metadata={"from": "branch"})
            return {"token": bool(token), "got": c.wait_for("h")}
        def nested(c):
            return c.parallel(lambda d: (d.step("t.echo", 2), d.hook_token("g"))[0])
        return ctx.parallel(hooked, nested)
    wf = _wf("nohook", body)
    h = Harness(wf, workers={"t.echo": echo})
    h.start("nohook")
    h.signal("h", "hi")
    st = h.state()
    assert st.output == [{"token": True, "got": "hi"}, [2]], st.error
    assert h.describe("ex-1")["hooks"]["h"]["metadata"] == {"from": "branch"}
    _clean(h, wf)


def test_an_update_during_a_parallel_of_branches_runs_at_the_groups_wait_and_replays_cold():
    from orbit.service.replay_host import default_runtime

    def body(ctx, input):
        log = []
        ctx.update_handler("note", lambda x: (log.append(x), len(log))[1])
        out = ctx.parallel(lambda c: c.step("t.slow", 1), lambda c: c.wait_for("go"))
        return {"out": out, "log": log}
    wf = _wf("upd-br", body)
    h = Harness(wf, workers={"t.slow": echo})
    h.held.add("t.slow")
    h.start("upd-br")
    assert h.update("ex-1", "note", "during") == 1
    done = [e for e in h.history("ex-1") if e["type"] == "UpdateCompleted"]
    assert [e["position"] for e in done] == [1]  # the group's position: where the workflow waits
    default_runtime().forget()
    h.release("t.slow")
    h.signal("go", "now")
    assert h.state().output == {"out": [1, "now"], "log": ["during"]}
    _clean(h, wf)
