"""Cancellation scopes on the simulator: `with ctx.scope() as s: ... s.cancel()`, and shielded
scopes whose work a workflow cancel leaves running."""

from __future__ import annotations

import orbit
from branch_helpers import _clean, echo
from code_harness import Harness
from orbit.workflow import CodeRegistry


def _wf(name, fn):
    return orbit.workflow(name, registry=CodeRegistry())(fn)


def test_a_scope_cancelled_halfway_through():
    def body(ctx, input):
        with ctx.scope() as s:
            first = ctx.step("t.echo", 1)
            ctx.parallel(lambda c: c.step("t.slow", 2), lambda c: (c.sleep("1m"), s.cancel("enough")))
            ctx.step("t.never", 3)
        return {"first": first, "after": ctx.step("t.echo", "after"), "cancelled": s.cancelled}
    wf = _wf("scope1", body)
    h = Harness(wf, workers={"t.echo": echo, "t.slow": echo, "t.never": echo})
    h.held.add("t.slow")
    h.start("scope1")
    h.run()
    st = h.state()
    assert st.output == {"first": 1, "after": "after", "cancelled": True}, st.error
    slow = "1.scope()/0/2.parallel()/0/1.t.slow"
    assert st.units[slow].status == "CANCELLED"
    assert [c["unit"] for c in h.cancelled_tasks] == [slow]
    assert not any(k.endswith("t.never") for k in st.units)
    assert st.units["1.scope()"].status == "CANCELLED"  # a replay knows the scope was cancelled
    assert h.describe("ex-1")["steps"][slow]["parent"] == "1.scope()/0/2.parallel()"
    _clean(h, wf)


def test_new_calls_in_a_cancelled_scope_raise_and_the_scope_swallows_them():
    def body(ctx, input):
        seen = []
        with ctx.scope() as s:
            s.cancel()
            try:
                ctx.step("t.echo", 1)
            except orbit.Cancelled:
                seen.append("cancelled")
                raise
        return {"seen": seen, "after": ctx.step("t.echo", 2)}
    wf = _wf("scope2", body)
    h = Harness(wf, workers={"t.echo": echo})
    h.start("scope2")
    assert h.state().output == {"seen": ["cancelled"], "after": 2}
    _clean(h, wf)


def test_a_shielded_scope_keeps_running_through_a_workflow_cancel():
    def body(ctx, input):
        with ctx.scope(shield=True):
            captured = ctx.step("t.capture", 1)
            ctx.sleep("1m")
            ctx.step("t.echo", {"captured": captured})
        ctx.step("t.never", 2)
    wf = _wf("shield1", body)
    h = Harness(wf, workers={"t.capture": echo, "t.echo": echo, "t.never": echo})
    h.held.add("t.capture")
    h.start("shield1")
    h.cancel("stop")
    assert h.state().status != "CANCELLED"  # the shielded capture is still running
    assert h.cancelled_tasks == []
    h.release("t.capture")
    h.run()
    st = h.state()
    assert st.status == "CANCELLED"
    assert st.units["1.shield()/0/1.t.capture"].status == "SUCCEEDED"
    assert st.units["1.shield()/0/3.t.echo"].output == {"captured": 1}
    assert not any(k.endswith("t.never") for k in st.units)
    _clean(h, wf)


def test_shielded_clean_up_during_a_workflow_cancel():
    def body(ctx, input):
        try:
            ctx.step("t.work", 1)
        except orbit.Cancelled:
            with ctx.scope(shield=True):
                ctx.parallel(lambda c: c.step("t.release", "a"), lambda c: c.sleep("10s"))
                ctx.step("t.release", "b")
            raise
    wf = _wf("shield2", body)
    h = Harness(wf, workers={"t.work": echo, "t.release": echo})
    h.held.add("t.work")
    h.start("shield2")
    h.cancel("customer cancelled")
    h.run()
    st = h.state()
    assert st.status == "CANCELLED"
    assert [c["unit"] for c in h.cancelled_tasks] == ["1.t.work"]
    released = sorted(i for t, i in h.calls if t == "t.release")
    assert released == ["a", "b"]
    _clean(h, wf)


def test_a_forced_cancel_stops_shielded_work_too():
    def body(ctx, input):
        with ctx.scope(shield=True):
            ctx.step("t.capture", 1)
    wf = _wf("shield3", body)
    h = Harness(wf, workers={"t.capture": echo})
    h.held.add("t.capture")
    h.start("shield3")
    h.cancel("now", force=True)
    assert h.state().status == "CANCELLED"
    assert [c["unit"] for c in h.cancelled_tasks] == ["1.shield()/0/1.t.capture"]
