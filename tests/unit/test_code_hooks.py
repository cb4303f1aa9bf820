"""Hooks of code workflows: metadata kept and shown, disposing, idempotent re-resume."""

from __future__ import annotations

import orbit
import pytest
from branch_helpers import _clean
from code_harness import Harness
from orbit.errors import HookAlreadyResumed, NotFound
from orbit.workflow import CodeRegistry


def _wf(name, fn):
    return orbit.workflow(name, registry=CodeRegistry())(fn)


def approve(ctx, input):
    ctx.hook_token("approval", metadata={"ask": "finance", "amount": 12})
    return ctx.wait_for("approval")


def test_metadata_is_kept_and_shown_by_describe_without_the_token():
    wf = _wf("hooks1", approve)
    h = Harness(wf)
    h.start("hooks1")
    hooks = h.describe("ex-1")["hooks"]
    assert hooks == {"approval": {"resumed": False, "metadata": {"ask": "finance", "amount": 12}}}
    created = next(e for e in h.history("ex-1") if e["type"] == "HookCreated")
    assert created["metadata"] == {"ask": "finance", "amount": 12}


def test_resuming_a_consumed_hook_again_with_the_same_payload_is_accepted_with_no_effect():
    wf = _wf("hooks2", approve)
    h = Harness(wf)
    h.start("hooks2")
    token = h.state().hooks["approval"]["token"]
    assert h.resume_hook(token, {"ok": True}) == "ex-1"
    assert h.state().status == "COMPLETED"
    before = h.history("ex-1")
    assert h.resume_hook(token, {"ok": True}) == "ex-1"  # a retry after it was consumed: no effect
    assert h.history("ex-1") == before
    with pytest.raises(HookAlreadyResumed):
        h.resume_hook(token, {"ok": False})
    _clean(h, wf)


def test_a_disposed_hook_resumes_nothing():
    def body(ctx, input):
        ctx.hook_token("late", metadata="x")
        got = ctx.race(timer=lambda c: c.sleep("1m"), answer=lambda c: c.wait_for("late"))
        ctx.dispose_hook("late")
        ctx.dispose_hook("late")  # once is enough: recorded once
        ctx.sleep("1h")
        return list(got)
    wf = _wf("hooks3", body)
    h = Harness(wf)
    h.start("hooks3")
    token = h.state().hooks["late"]["token"]
    h.advance(2 * 60_000)
    h.run_until_idle()
    assert h.describe("ex-1")["hooks"]["late"]["disposed"] is True
    with pytest.raises(NotFound, match="was disposed"):
        h.resume_hook(token, "too late")
    h.run()
    assert h.state().output == ["timer", None]
    assert [e["type"] for e in h.history("ex-1")].count("HookDisposed") == 1
    _clean(h, wf)


def test_disposing_an_unknown_hook_is_a_clear_error():
    wf = _wf("hooks4", lambda ctx, i: ctx.dispose_hook("nope"))
    h = Harness(wf)
    h.start("hooks4")
    st = h.state()
    assert st.status == "FAILED" and "has no hook 'nope'" in st.error.message
