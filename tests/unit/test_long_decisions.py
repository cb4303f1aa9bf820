"""No round limit strands an execution, and racing deciders back off (docs/limits.md).

A decision that reaches its budget (rounds or events) commits what it has and sends itself a
continuation; the next decision goes on. Conflict retries wait a jittered, growing time.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from dsl_harness import sim_with
from orbit.core.decider import decide as decider
from orbit.errors import ConflictError
from orbit.service.conflict_backoff import BASE_S, CAP_S, conflict_delay
from orbit.service.engine import MAX_CONFLICT_RETRIES

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_contention


def chain(n: int) -> dict[str, Any]:
    steps: dict[str, Any] = {"s0": {"compute": "{% input.start %}"}}
    for i in range(1, n):
        steps[f"s{i}"] = {"compute": f"{{% steps.s{i - 1}.output + 1 %}}"}
    return steps


def handled(sim: Any, eid: str) -> list[str]:
    return [m for c in sim.store.scan_commits(eid, newest_first=False) for m in c.all_inbound]


@pytest.mark.parametrize("rounds,events", [(20, 10_000), (10_000, 50), (7, 13)])
def test_a_chain_longer_than_one_decision_completes(monkeypatch: pytest.MonkeyPatch, rounds: int,
                                                     events: int) -> None:
    monkeypatch.setattr(decider, "MAX_ROUNDS", rounds)
    monkeypatch.setattr(decider, "MAX_DECISION_EVENTS", events)
    n = 300
    sim = sim_with(chain(n), output="{% steps.s299.output %}")
    eid = sim.start("wf", {"start": 1})
    sim.run_until_idle()
    desc = sim.describe(eid)
    assert desc["status"] == "COMPLETED" and desc["output"] == n
    sizes = [len(c.events) for c in sim.store.scan_commits(eid, newest_first=False)]
    assert len(sizes) > n // min(rounds, events)  # many bounded decisions, not one
    assert max(sizes) <= events + 3 * rounds  # a decision stops at its budget (one round may finish it)
    assert sim.dead_letters == []


def test_a_decision_that_spends_its_expression_steps_continues_in_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(decider, "MAX_DECISION_STEPS", 200)
    heavy = "{% $sum($map([1..30], function($v){ $v })) + steps.PREV.output %}"
    steps: dict[str, Any] = {"s0": {"compute": "{% 0 %}"}}
    steps.update({f"s{i}": {"compute": heavy.replace("PREV", f"s{i - 1}")} for i in range(1, 20)})
    sim = sim_with(steps, output="{% steps.s19.output %}")
    eid = sim.start("wf", {})
    sim.run_until_idle()
    assert sim.describe(eid)["output"] == 19 * 465
    # 20 steps are far from the round and event budgets: only the steps budget continues it
    assert sum(1 for m in handled(sim, eid) if m.startswith("continue:")) >= 2


def test_with_the_default_budget_a_long_chain_continues_itself() -> None:
    n = decider.MAX_ROUNDS * 2 + 100
    sim = sim_with(chain(n), output="{% steps.s" + str(n - 1) + ".output %}")
    eid = sim.start("wf", {"start": 0})
    sim.run_until_idle()
    assert sim.describe(eid)["output"] == n - 1
    assert sum(1 for m in handled(sim, eid) if m.startswith("continue:")) >= 2


def test_a_redelivered_continuation_decides_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decider, "MAX_ROUNDS", 10)
    sim = sim_with(chain(40))
    eid = sim.start("wf", {"start": 0})
    sim.run_until_idle()
    seqs = len(sim.history(eid))
    first = next(m for m in handled(sim, eid) if m.startswith("continue:"))
    sim.engine.handle({"kind": "wake", "execution_id": eid, "id": first})  # again, as SQS may
    sim.run_until_idle()
    assert len(sim.history(eid)) == seqs and sim.describe(eid)["status"] == "COMPLETED"


# --- conflict retries ----------------------------------------------------------------------------


def test_conflict_delays_are_jittered_and_grow_to_a_cap() -> None:
    for attempt in range(12):
        cap = min(CAP_S, BASE_S * 2**attempt)
        assert conflict_delay(attempt, 0.0) == 0.0
        assert conflict_delay(attempt, 0.999) <= cap
        assert conflict_delay(attempt, 0.5) == pytest.approx(cap / 2)
    assert conflict_delay(3, 0.2) != conflict_delay(3, 0.7)  # two racers draw different waits


def test_the_engine_waits_between_conflict_retries_then_gives_up() -> None:
    sim = sim_with({"w": {"wait_for": "go"}})
    eid = sim.start("wf", {})
    sim.run_until_idle()
    waits: list[int] = []
    sim.engine.backoff = waits.append

    def always_conflict(execution_id: str, commit: Any, *expiry: Any) -> None:
        raise ConflictError(execution_id, commit.first_seq)

    sim.store.commit = always_conflict  # type: ignore[method-assign]
    with pytest.raises(ConflictError):
        sim.engine.handle({"kind": "signal", "execution_id": eid, "id": "signal:x", "name": "go"})
    assert waits == list(range(MAX_CONFLICT_RETRIES - 1))


def test_twelve_racing_deciders_back_off_and_lose_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    # one_round asserts that every message that did not give up is in the history
    results = [bench_contention.one_round(12, True, r) for r in range(2)]
    gave_up = sum(g for g, _ in results)
    with capsys.disabled():
        print(f"\n12 racing deciders with jittered backoff: {gave_up} give-ups of 24 messages")
    assert gave_up <= 2
