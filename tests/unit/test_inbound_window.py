"""`state.inbound` (handled message ids, for redelivery detection) stays bounded.

Without bounds the state and every snapshot grew with every message an
execution ever handled, so a cold load of a long execution read more and more.
Now the state keeps the ids of its last `RECENT_COMMITS` commits, and signal
ids (the caller's idempotency keys) for `INBOUND_WINDOW_MS` of commit time; an
older redelivery is found in the commit log (orbit/service/outbox.py), read back only
to the message's send time. The bounds are applied inside the fold, so a cached
state, a loaded one and a snapshot agree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from orbit.core.history.model import apply_commit
from orbit.core.history.state import INBOUND_WINDOW_MS, RECENT_COMMITS, ExecutionState, remember_inbound
from orbit.local.cfn import load_template
from orbit.service.outbox import SEND_SKEW_MS
from orbit.testing.simulator import Simulator, hang

from tests.unit.dsl_harness import T0, definition

HOUR = 3_600_000
DAY = 24 * HOUR
ROOT = Path(__file__).resolve().parents[2]


def test_ids_are_forgotten_after_the_last_commits_and_signal_ids_after_the_window() -> None:
    s = ExecutionState("e")
    remember_inbound(s, ["sig-1", "r-0"], 1, T0, {"sig-1"})
    for i in range(1, RECENT_COMMITS):
        remember_inbound(s, [f"r-{i}"], 1 + i, T0 + i)
    assert "r-0" in s.inbound and len(s.inbound_log) == RECENT_COMMITS
    remember_inbound(s, [f"r-{RECENT_COMMITS}"], 100, T0 + DAY)  # one commit more: the oldest goes
    assert "r-0" not in s.inbound and "r-1" in s.inbound and len(s.inbound_log) == RECENT_COMMITS
    assert s.inbound["sig-1"] == 1  # a signal id outlives the count bound ...
    remember_inbound(s, [], 101, T0 + INBOUND_WINDOW_MS)  # exactly the window: still remembered
    assert "sig-1" in s.inbound
    remember_inbound(s, [], 102, T0 + INBOUND_WINDOW_MS + 1)  # ... not the time window
    assert "sig-1" not in s.inbound and not s.signal_log


def test_the_logs_round_trip_and_old_snapshots_are_cut_down() -> None:
    s = ExecutionState("e")
    apply_commit(s, [], "m1", 1, T0)
    apply_commit(s, [], "m2", 2, T0 + 5, ["m3"])
    d = s.to_dict()
    assert "inbound" not in d  # the index is rebuilt, not stored twice
    assert d["inbound_log"] == [[1, T0, ["m1"]], [2, T0 + 5, ["m2", "m3"]]] and d["signal_log"] == []
    back = ExecutionState.from_dict(json.loads(json.dumps(d)))
    assert back.inbound == {"m1": 1, "m2": 2, "m3": 2} and back.to_dict() == d
    # A snapshot written before the log existed: its ids count as handled at the snapshot's time.
    old = {**d, "inbound": {"x": 1, "y": 4, "z": 1}, "updated_at_ms": T0 + 9}
    del old["inbound_log"], old["signal_log"]
    s2 = ExecutionState.from_dict(old)
    assert s2.inbound == {"x": 1, "z": 1, "y": 4}
    assert list(s2.inbound_log) == [(1, T0 + 9, ("x", "z")), (4, T0 + 9, ("y",))]
    # A snapshot from when the log was bounded by 19 days of time: cut to the last commits on load.
    long_log = {**d, "inbound_log": [[i, T0 + i, [f"m{i}"]] for i in range(1, 500)]}
    s3 = ExecutionState.from_dict(long_log)
    assert len(s3.inbound_log) == RECENT_COMMITS and len(s3.inbound) == RECENT_COMMITS
    assert f"m{499 - RECENT_COMMITS + 1}" in s3.inbound and "m1" not in s3.inbound


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


def heartbeat_body(eid: str, token: str, n: int, unit: str = "work") -> dict[str, Any]:
    return {
        "kind": "heartbeat",
        "execution_id": eid,
        "id": f"heartbeat:{token}:s:{n}",
        "unit": unit,
        "token": token,
        "details": {"n": n},
    }


def heartbeat(sim: Simulator, eid: str, token: str, n: int, unit: str = "work") -> dict[str, Any]:
    msg = heartbeat_body(eid, token, n, unit)
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
        if day in (5, 10, 30, 60):
            state = sim.store.load(eid).fold()
            sizes[day] = len(json.dumps(sim.store._snapshots[eid][1]))
            ids[day] = len(state.inbound)
    assert ids[5] == ids[10] == ids[60] == RECENT_COMMITS  # from the 17th commit on: level
    assert sizes[60] < sizes[10] * 1.05, sizes  # the snapshot does not grow with the history
    cached, _ = sim.engine._cache[eid]  # what the deciding process holds = what a cold load folds
    assert cached.to_dict() == sim.store.load(eid).fold().to_dict()
    assert cached.inbound == sim.store.load(eid).fold().inbound
    assert sim.describe(eid)["steps"]["work"]["status"] == "DISPATCHED"


def test_a_recent_redelivery_is_recognised_from_the_state() -> None:
    sim, eid, token = long_task()
    for n in range(1, 12):
        sim.clock.advance(HOUR)
        heartbeat(sim, eid, token, n)
    before = len(sim.history(eid))
    sim.engine.handle({**heartbeat_body(eid, token, 5)})  # 6 commits ago: remembered, nothing recorded
    assert len(sim.history(eid)) == before


def test_an_old_result_is_never_applied_twice_even_without_a_send_time() -> None:
    sim, eid, token = long_task()
    result = {"kind": "result", "execution_id": eid, "id": "r1", "unit": "work", "token": token, "output": 1}
    sim.engine.handle(result)
    sim.clock.advance(INBOUND_WINDOW_MS + DAY)
    for n in range(RECENT_COMMITS + 1):  # a late duplicate under other ids: their commits push "r1" out
        sim.engine.handle({**result, "id": f"r-late-{n}"})
    assert "r1" not in sim.engine.load_state(eid).inbound
    sim.engine.handle(result)  # no send time, no receive count: decided from the state alone
    types = sim.types(eid)
    assert types.count("StepSucceeded") == 1 and types[-1] == "StaleResultIgnored"
    assert sim.describe(eid)["status"] == "COMPLETED"


def test_a_signal_id_is_an_idempotency_key_for_the_whole_window() -> None:
    sim = Simulator(start_ms=T0)
    sim.register(definition({"w": {"wait_for": "note", "after": ["x"]},
                             "x": {"task": "t.x", "timeout": "100d"}}))
    sim.worker("t.x", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.engine.signal(eid, "note", {"n": 1}, signal_id="sig-1")
    sim.run_until_idle()
    token = sim.engine.load_state(eid).units["x"].token
    for n in range(1, 3 * RECENT_COMMITS):
        sim.clock.advance(HOUR)
        heartbeat(sim, eid, token, n, unit="x")
    assert "signal:sig-1" in sim.engine.load_state(eid).inbound
    sim.engine.signal(eid, "note", {"n": 1}, signal_id="sig-1")  # the caller retries: not buffered twice
    sim.run_until_idle()
    assert len(sim.engine.load_state(eid).signals["note"]) == 1


def lose_sends(sim: Simulator, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The decider dies between its commit and its sends: every send raises after the commit."""
    lost: list[dict[str, Any]] = []

    def boom(queue: str, body: dict[str, Any], delay_s: int = 0) -> None:
        lost.append(body)
        raise ConnectionError("decider died after its commit")

    monkeypatch.setattr(sim.queues, "send_task", boom)
    return lost


def two_steps() -> tuple[Simulator, str]:
    sim = Simulator(start_ms=T0, snapshot_every=5)
    sim.register(definition({
        "a": {"task": "t.a", "timeout": "100d"},
        "b": {"task": "t.b", "after": ["a"]},
        "side": {"task": "t.side", "timeout": "100d"},
    }))
    sim.worker("t.a", hang())
    sim.worker("t.side", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    return sim, eid


def test_a_redelivery_older_than_the_state_remembers_resends_its_effects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sim, eid = two_steps()
    state = sim.engine.load_state(eid)
    tok_a, tok_side = state.units["a"].token, state.units["side"].token
    sent_at = sim.clock.now_ms()
    result = {"kind": "result", "execution_id": eid, "id": f"result:{tok_a}", "unit": "a",
              "token": tok_a, "output": 1, "sent_at_ms": sent_at}
    with monkeypatch.context() as m:
        lost = lose_sends(sim, m)
        assert sim.engine.handle_batch([result]) and [b["unit"] for b in lost] == ["b"]
    assert sim.describe(eid)["steps"]["b"]["status"] == "SCHEDULED"  # committed, never sent
    queued = len(sim.queues.tasks.get("t", []))
    for n in range(2 * RECENT_COMMITS):  # the other step heartbeats: 32 commits, snapshots between
        sim.clock.advance(60_000)
        heartbeat(sim, eid, tok_side, n, unit="side")
    assert f"result:{tok_a}" not in sim.engine.load_state(eid).inbound
    sim.engine._cache.clear()  # a new decider instance
    assert sim.engine.handle_batch([result], [2]) == []  # SQS: ApproximateReceiveCount 2
    resent = list(sim.queues.tasks["t"])[queued:]
    assert [body["unit"] for _, body in resent] == ["b"]  # the lost dispatch, with its token
    assert resent[0][1]["token"] == sim.engine.load_state(eid).units["b"].token
    types = sim.types(eid)
    assert types.count("StepSucceeded") == 1 and "StaleResultIgnored" not in types


def test_the_look_back_stops_at_the_send_time(monkeypatch: pytest.MonkeyPatch) -> None:
    sim, eid = two_steps()
    tok_side = sim.engine.load_state(eid).units["side"].token
    for n in range(200):
        sim.clock.advance(60_000)
        heartbeat(sim, eid, tok_side, n, unit="side")
    read: list[int] = []
    scan = sim.store.scan_commits

    def counting(execution_id: str, newest_first: bool = True) -> Any:
        for c in scan(execution_id, newest_first):
            read.append(c.first_seq)
            yield c

    monkeypatch.setattr(sim.store, "scan_commits", counting)
    sent_at = sim.clock.now_ms() - 10 * 60_000  # sent 10 minutes ago, redelivered now, never handled
    body = {**heartbeat_body(eid, tok_side, 999, unit="side"), "sent_at_ms": sent_at}
    assert sim.engine.handle_batch([body], [3]) == []
    minutes = (10 * 60_000 + SEND_SKEW_MS) // 60_000
    assert minutes <= len(read) <= minutes + 2, len(read)  # 15 of 200 commits, not the whole log
    assert sim.types(eid)[-1] == "StepHeartbeat"  # not found: decided as new


def test_a_redelivery_without_receive_count_or_send_time_reads_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sim, eid = two_steps()
    tok_side = sim.engine.load_state(eid).units["side"].token
    monkeypatch.setattr(sim.store, "scan_commits", lambda *a, **k: pytest.fail("scanned"))
    sim.engine.handle(heartbeat_body(eid, tok_side, 1, unit="side"))
    sim.engine.handle_batch([{**heartbeat_body(eid, tok_side, 2, unit="side"), "sent_at_ms": T0}], [1])


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
