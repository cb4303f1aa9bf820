"""`state.inbound` (handled message ids, for redelivery detection) is bounded by a time window.

Without the window the state and every snapshot grew with every message an
execution ever handled. The window is `INBOUND_WINDOW_MS` of commit time,
pruned inside the fold, so a cached state, a loaded one and a snapshot agree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orbit.local.cfn import load_template
from orbit.model import apply_commit
from orbit.simulator import Simulator, hang
from orbit.state import INBOUND_WINDOW_MS, ExecutionState, remember_inbound

from tests.unit.dsl_harness import T0, definition

HOUR = 3_600_000
DAY = 24 * HOUR
ROOT = Path(__file__).resolve().parents[2]


def test_ids_are_forgotten_once_their_commit_is_older_than_the_window() -> None:
    s = ExecutionState("e")
    remember_inbound(s, ["a", "b"], 1, T0)
    remember_inbound(s, ["c"], 3, T0 + DAY)
    remember_inbound(s, ["d"], 4, T0 + INBOUND_WINDOW_MS)  # exactly the window: "a", "b" stay
    assert s.inbound == {"a": 1, "b": 1, "c": 3, "d": 4}
    remember_inbound(s, [], 5, T0 + INBOUND_WINDOW_MS + 1)  # a commit handling nothing still ages
    assert s.inbound == {"c": 3, "d": 4}
    assert [seq for seq, _, _ in s.inbound_log] == [3, 4]


def test_the_log_round_trips_and_old_snapshots_are_read() -> None:
    s = ExecutionState("e")
    apply_commit(s, [], "m1", 1, T0)
    apply_commit(s, [], "m2", 2, T0 + 5, ["m3"])
    d = s.to_dict()
    assert "inbound" not in d  # the index is rebuilt, not stored twice
    assert d["inbound_log"] == [[1, T0, ["m1"]], [2, T0 + 5, ["m2", "m3"]]]
    back = ExecutionState.from_dict(json.loads(json.dumps(d)))
    assert back.inbound == {"m1": 1, "m2": 2, "m3": 2} and back.to_dict() == d
    # A snapshot written before the log existed: its ids count as handled at the snapshot's time.
    old = {**d, "inbound": {"x": 1, "y": 4, "z": 1}, "updated_at_ms": T0 + 9}
    del old["inbound_log"]
    s2 = ExecutionState.from_dict(old)
    assert s2.inbound == {"x": 1, "z": 1, "y": 4}
    assert list(s2.inbound_log) == [(1, T0 + 9, ("x", "z")), (4, T0 + 9, ("y",))]
    remember_inbound(s2, [], 9, T0 + 9 + INBOUND_WINDOW_MS + 1)
    assert s2.inbound == {}


def long_task() -> tuple[Simulator, str, str]:
    """An execution whose one task runs for months and heartbeats: a steady message rate."""
    sim = Simulator(start_ms=T0, snapshot_every=25)
    sim.register(definition({"work": {"task": "t.long", "timeout": "100d"}}))
    sim.worker("t.long", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    token = sim.engine.load_state(eid).units["work"].token
    assert token
    return sim, eid, token


def heartbeat(sim: Simulator, eid: str, token: str, n: int) -> dict[str, Any]:
    msg = {
        "kind": "heartbeat",
        "execution_id": eid,
        "id": f"heartbeat:{token}:s:{n}",
        "unit": "work",
        "token": token,
        "details": {"n": n},
    }
    sim.engine.handle(msg)
    return msg


def test_a_long_running_execution_keeps_a_bounded_state_and_snapshot() -> None:
    sim, eid, token = long_task()
    sizes: dict[int, int] = {}
    ids: dict[int, int] = {}
    n = 0
    for day in range(1, 61):
        for _ in range(6):  # one heartbeat every 4 hours
            sim.clock.advance(4 * HOUR)
            n += 1
            heartbeat(sim, eid, token, n)
        if day in (10, 30, 45, 60):
            state = sim.store.load(eid).fold()
            sizes[day] = len(json.dumps(sim.store._snapshots[eid][1]))
            ids[day] = len(state.inbound)
    per_window = INBOUND_WINDOW_MS // (4 * HOUR)
    assert ids[10] == 6 * 10 + 2  # start + started, nothing old enough to forget yet
    assert ids[30] <= per_window + 1 and ids[45] == ids[30] == ids[60]
    assert sizes[60] < sizes[30] * 1.05, sizes  # stopped growing: steady state
    cached, _ = sim.engine._cache[eid]  # what the deciding process holds = what a cold load folds
    assert cached.to_dict() == sim.store.load(eid).fold().to_dict()
    assert cached.inbound == sim.store.load(eid).fold().inbound
    assert sim.describe(eid)["steps"]["work"]["status"] == "DISPATCHED"


def test_a_redelivery_inside_the_window_is_still_recognised() -> None:
    sim, eid, token = long_task()
    first = heartbeat(sim, eid, token, 1)
    for n in range(2, 40):
        sim.clock.advance(DAY)
        heartbeat(sim, eid, token, n)
    recent = {**first, "id": f"heartbeat:{token}:s:30", "details": {"n": 30}}
    before = len(sim.history(eid))
    sim.engine.handle(recent)  # 9 days old: remembered, nothing recorded
    assert len(sim.history(eid)) == before
    # A result redelivered after its id was forgotten is still never applied twice: the
    # state itself refuses it (the token is no longer live).
    result = {"kind": "result", "execution_id": eid, "id": "r1", "unit": "work", "token": token, "output": 1}
    sim.engine.handle(result)
    sim.clock.advance(INBOUND_WINDOW_MS + DAY)
    sim.engine.handle({**result, "id": "r2"})  # a late duplicate under another id: its commit ages "r1" out
    assert "r1" not in sim.engine.load_state(eid).inbound
    sim.engine.handle(result)
    types = sim.types(eid)
    assert types.count("StepSucceeded") == 1 and types[-2:] == ["StaleResultIgnored"] * 2
    assert sim.describe(eid)["status"] == "COMPLETED"


def retention_s(props: dict[str, Any]) -> int:
    return int(props.get("MessageRetentionPeriod", 345_600))  # SQS default: 4 days


def test_the_window_covers_the_decision_queue_and_its_dead_letter_queue() -> None:
    """A message is deleted by retention from its original enqueue time (also in the DLQ); a
    redrive makes it new for one more decision-queue retention. The window must cover both."""
    res = load_template(ROOT / "template.yaml")["Resources"]
    queue = res["DecisionQueue"]["Properties"]
    dlq_name = queue["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    q, dlq = retention_s(queue), retention_s(res[dlq_name]["Properties"])
    longest_ms = (max(q, dlq) + q) * 1000
    assert longest_ms + DAY <= INBOUND_WINDOW_MS, (q, dlq)
