"""`ctx.wait_for_condition` on the simulator: polling with durable waits, backoff, running out."""

from __future__ import annotations

import orbit
from branch_helpers import _clean
from code_harness import Harness
from orbit.workflow import CodeRegistry


def _wf(name, fn):
    return orbit.workflow(name, registry=CodeRegistry())(fn)


def test_polls_until_the_condition_holds_with_backoff():
    def body(ctx, input):
        return ctx.wait_for_condition(lambda c, s: c.step("t.status", s), {"n": 0},
                                      until=lambda s: s["n"] >= 3, delay="10s", backoff=2)
    wf = _wf("cond1", body)
    h = Harness(wf, workers={"t.status": lambda s, attempt: {"n": s["n"] + 1}})
    h.start("cond1")
    h.run()
    st = h.state()
    assert st.output == {"n": 3}, st.error
    sleeps = [u.fire_at_ms - u.scheduled_at_ms for k, u in st.units.items() if k.endswith("sleep()")]
    assert sleeps == [10_000, 20_000]
    assert "1.condition()/0/1.t.status" in st.units and "1.condition()/0/5.t.status" in st.units
    _clean(h, wf)


def test_running_out_of_attempts_is_a_clear_error():
    def body(ctx, input):
        return ctx.wait_for_condition("t.status", {"n": 0}, until=lambda s: s["n"] > 99,
                                      delay="1s", max_attempts=3)
    wf = _wf("cond2", body)
    h = Harness(wf, workers={"t.status": lambda s, attempt: {"n": s["n"] + 1}})
    h.start("cond2")
    h.run()
    st = h.state()
    assert st.status == "FAILED" and st.error.code == "CONDITION_NOT_MET"
    assert "not met after 3 attempt(s)" in st.error.message and "'n': 3" in st.error.message
    _clean(h, wf)


def test_out_of_attempts_can_be_caught():
    def body(ctx, input):
        try:
            ctx.wait_for_condition(lambda c, s: s + 1, 0, until=lambda s: s > 5, delay="1m", max_attempts=2)
        except orbit.ConditionNotMet as e:
            return {"code": e.code, "state": e.details["state"]}
    wf = _wf("cond3", body)
    h = Harness(wf)
    h.start("cond3")
    h.run()
    assert h.state().output == {"code": "CONDITION_NOT_MET", "state": 2}
    _clean(h, wf)


def test_bad_strategy_names_the_option():
    wf = _wf("cond4", lambda ctx, i: ctx.wait_for_condition("t.x", None, max_attempts=0))
    h = Harness(wf)
    h.start("cond4")
    st = h.state()
    assert st.status == "FAILED" and "max_attempts must be an int from 1" in st.error.message
