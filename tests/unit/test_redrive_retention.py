"""A redrive lifts the expiry an execution's items got when it first ended (retention x redrive).

Without it, TTL would delete the history of a redriven execution that is still running once the
first end's retention passed. The next end writes the real expiry again.
"""

from __future__ import annotations

from orbit.core.definition.retention import expires_at_s, provisional_expiry_s
from orbit.service.retention import NO_EXPIRY_S
from test_redrive import chain


def test_redrive_lifts_the_expiry_and_the_next_end_sets_it_again() -> None:
    sim, w = chain()
    eid = sim.start("wf", {}, id="rr-1")
    sim.run()
    store = sim.engine.store
    first = store.expiry[eid]
    assert sim.describe(eid)["status"] == "FAILED" and first < NO_EXPIRY_S
    retire, set_to = store.retire, []
    store.retire = lambda e, ended, exp, *rest: (set_to.append(exp), retire(e, ended, exp, *rest))
    w["c"].broken = {"abc"}  # the redrive gets past b, then c fails: the execution ends again
    w["b"].fixed = True
    sim.redrive(eid)
    sim.run_until_idle()
    assert sim.describe(eid)["status"] == "FAILED"
    # The first end was young: its items kept the provisional expiry they were written with (an
    # hour past the end's); after a redrive the next end writes the exact one, end + retention.
    state = sim.engine.load_state(eid)
    retention = sim.engine.retention_ms
    assert first == provisional_expiry_s(state.created_at_ms, retention)
    exact = expires_at_s(state.finished_at_ms, retention)
    assert set_to == [NO_EXPIRY_S, exact]  # lifted at the redrive, the real expiry at the next end
    assert store.expiry[eid] == exact


def test_a_running_redriven_execution_has_no_expiry() -> None:
    sim, w = chain()
    w["c"].output = None
    eid = sim.start("wf", {}, id="rr-2")
    sim.run()
    store = sim.engine.store
    assert store.expiry[eid] < NO_EXPIRY_S
    w["b"].fixed = True
    sim.worker("t.c", lambda input, ctx: ctx.heartbeat() or (_ for _ in ()).throw(RuntimeError("x")))
    sim.redrive(eid)
    # before any worker answers, the execution is running again and nothing of it may expire
    assert sim.describe(eid)["status"] == "RUNNING"
    assert store.expiry[eid] == NO_EXPIRY_S
