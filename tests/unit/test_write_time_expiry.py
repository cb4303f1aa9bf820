"""Write-time expiry: the pure arithmetic, and the engine + sweeper on the memory store."""

from __future__ import annotations

from orbit.core.definition.retention import (
    CLOCK_SKEW_MS,
    MIN_RETENTION_MS,
    SWEEP_AFTER_MS,
    YOUNG_MS,
    ended_young,
    expires_at_s,
    provisional_expiry_s,
    writes_provisionally,
)
from orbit.service.retention import NO_EXPIRY_S

from tests.unit.dsl_harness import sim_with

C = 1_700_000_000_123
R = 2 * 24 * 3600 * 1000


def test_the_provisional_expiry_is_that_of_an_end_at_the_close_of_the_first_hour() -> None:
    assert provisional_expiry_s(C, R) == expires_at_s(C + YOUNG_MS, R) == -(-(C + YOUNG_MS + R) // 1000)
    for end in (C, C + 1, C + YOUNG_MS - 1):  # never earlier than the exact expiry, at most an hour later
        assert ended_young(C, end)
        assert 0 <= provisional_expiry_s(C, R) - expires_at_s(end, R) <= YOUNG_MS // 1000


def test_young_ends_and_provisional_writes_share_the_boundary_with_a_skew_margin() -> None:
    assert ended_young(C, C + YOUNG_MS - 1) and not ended_young(C, C + YOUNG_MS)
    assert writes_provisionally(C, C + YOUNG_MS) and writes_provisionally(C, C + YOUNG_MS + CLOCK_SKEW_MS - 1)
    assert not writes_provisionally(C, C + YOUNG_MS + CLOCK_SKEW_MS)
    # The sweeper comes after every provisional write, and long before the earliest provisional expiry.
    assert YOUNG_MS + CLOCK_SKEW_MS + 15 * 60_000 < SWEEP_AFTER_MS < YOUNG_MS + MIN_RETENTION_MS


def test_an_execution_that_ends_young_keeps_its_provisional_expiry_and_one_that_lasts_is_pinned() -> None:
    sim = sim_with({"w": {"wait_for": "go"}}, retention="2d")
    store = sim.engine.store
    young = sim.start("wf", {}, id="young")
    old = sim.start("wf", {}, id="old")
    sim.run_until_idle()
    created = sim.engine.load_state(young).created_at_ms
    p = provisional_expiry_s(created, R)
    assert store.provisional == {young: p, old: p} and young not in store.expiry
    sim.signal(young, "go", {})
    sim.run_until_idle()
    assert store.expiry[young] == p  # the end wrote the same expiry, and nothing else changed it
    sim.clock.advance(SWEEP_AFTER_MS - 1)
    assert sim.engine.sweep_young() == 0  # not old enough yet
    sim.clock.advance(2)
    assert sim.engine.sweep_young() == 1 and store.expiry[old] == NO_EXPIRY_S and old not in store.provisional
    assert store.cursor is not None and store.cursor.endswith("#old")
    assert sim.engine.sweep_young() == 0  # the cursor moved past it
    sim.signal(old, "go", {})
    sim.run_until_idle()
    state = sim.engine.load_state(old)
    assert store.expiry[old] == expires_at_s(state.finished_at_ms, R)  # exact, once it ended old


def test_an_execution_whose_state_cannot_be_read_is_still_pinned_and_the_sweep_goes_on() -> None:
    sim = sim_with({"w": {"wait_for": "go"}}, retention="2d")
    store = sim.engine.store
    broken, fine = sim.start("wf", {}, id="broken"), sim.start("wf", {}, id="fine")
    sim.run_until_idle()
    load = store.load

    def unreadable(eid: str) -> object:
        if eid == broken:
            raise ValueError("a damaged snapshot")
        return load(eid)

    store.load = unreadable  # type: ignore[method-assign]
    sim.clock.advance(SWEEP_AFTER_MS + 1)
    assert sim.engine.sweep_young() == 2
    assert store.expiry[broken] == store.expiry[fine] == NO_EXPIRY_S and not store.provisional
