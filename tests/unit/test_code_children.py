"""Several children at once (`ctx.children`), and the `abandon` parent policy."""

from __future__ import annotations

import orbit
from branch_helpers import _clean, echo
from code_harness import Harness
from orbit.workflow import CodeRegistry

REG = CodeRegistry()


@orbit.workflow("kid", registry=REG)
def kid(ctx, x):
    return ctx.step("t.kid", x)


@orbit.workflow("ten", registry=REG)
def ten(ctx, input):
    specs = [{"workflow": "kid", "input": i, "parent_policy": "abandon" if i == 3 else "cancel"}
             for i in range(10)]
    return ctx.children(specs)


@orbit.workflow("few", registry=REG)
def few(ctx, input):
    return ctx.children([("kid", 1), ("kid", 2)])


def test_children_started_at_once_return_in_order():
    h = Harness(few, kid, workers={"t.kid": echo})
    h.start("few")
    st = h.state()
    assert st.output == [1, 2]
    assert sorted(st.units) == ["1.children()", "1.children()/0/1.child(kid)", "1.children()/1/1.child(kid)"]
    _clean(h, few)


def test_ten_children_one_abandoned_then_the_parent_is_cancelled():
    h = Harness(ten, kid, workers={"t.kid": echo})
    h.held.add("t.kid")
    h.start("ten")
    st = h.state()
    kids = sorted(st.children)
    assert len(kids) == 10  # all ten started in the first decision
    h.cancel("stop")
    assert h.state().status == "CANCELLED"
    statuses = {k: h.state(k).status for k in kids}
    abandoned = "ex-1/1.children()/3/1.child(kid, abandon)"
    assert statuses.pop(abandoned) == "RUNNING"
    assert set(statuses.values()) == {"CANCELLED"}
    h.release("t.kid")
    h.run()
    assert h.state(abandoned).status == "COMPLETED" and h.state(abandoned).output == 3
    assert h.state().status == "CANCELLED"


def test_bad_children_specs_are_clear_errors():
    wf = orbit.workflow("badkids", registry=CodeRegistry())(lambda ctx, i: ctx.children([{"wf": "kid"}]))
    h = Harness(wf)
    h.start("badkids")
    st = h.state()
    assert st.status == "FAILED" and "children[0] must be (workflow, input)" in st.error.message
