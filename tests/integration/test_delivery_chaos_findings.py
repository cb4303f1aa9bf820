"""The delivery-chaos harness's findings N1 and N2 (tests/chaos/README.md), each reduced to one scripted
event sequence through the real handlers on moto, in the style (and with the helpers) of
test_delivery_findings.py. N3 (the worker's deferral) is tests/unit/test_worker_dedupe.py's.

- N2: a hand-over wake handed over twice in one SQS batch (same MessageId) ran its at_least_once inline
  step twice in one invocation. Control: the wake once.
- N1: a decider whose cached state predates another decider's commit of an at_least_once inline step
  saw the step's lease passed and re-ran it before its (then refused) commit. Control: the same
  message reaches a decider whose state is current.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import test_delivery_findings as findings
from orbit import worker
from test_delivery_findings import Deliveries, signal, start

world = findings.world  # the fixture: the real handlers on moto, environments by name

RUNS: Counter[str] = Counter()


@worker.task("chaosfix.count")
def count(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    RUNS[str(input.get("v"))] += 1
    return {"v": input.get("v")}


# ------------------------------------------------------------------ N2
HANDED_OVER = {
    "orbit": 1, "name": "n2-inline", "version": "1",
    "steps": {"a": {"task": "chaosfix.count", "inline": True, "input": {"v": "n2-a"}},
              "b": {"task": "findings.echo", "after": ["a"], "input": {"v": 2}}},
    "output": "{% steps.b.output %}",
}


def n2(w: Deliveries, twice: bool) -> None:
    RUNS.clear()
    start(w, HANDED_OVER)  # the API hands the inline step over: a wake on the decision queue
    wake = w.receive()
    assert len(wake) == 1 and "inline:" in wake[0]["Body"]
    w.deliver("d1", wake + wake if twice else wake)  # SQS hands the same record over twice
    w.settle("d1")


def test_n2_a_hand_over_twice_in_one_batch_runs_its_step_once(world: Deliveries) -> None:
    n2(world, twice=True)
    assert world.status() == "COMPLETED"
    assert RUNS["n2-a"] == 1


def test_n2_control_the_hand_over_once(world: Deliveries) -> None:
    n2(world, twice=False)
    assert world.status() == "COMPLETED"
    assert RUNS["n2-a"] == 1


# ------------------------------------------------------------------ N1
TWO_SIGNALS = {
    "orbit": 1, "name": "n1-inline", "version": "1",
    "steps": {"a": {"task": "chaosfix.count", "inline": True, "timeout": "10s", "input": {"v": "n1-a"}},
              "approve": {"wait_for": "go"},
              "more": {"wait_for": "more"},
              "b": {"task": "findings.echo", "after": ["a", "approve", "more"], "input": {"v": 2}}},
    "output": "{% steps.b.output %}",
}


def n1(w: Deliveries, late_signal_to: str) -> None:
    RUNS.clear()
    start(w, TWO_SIGNALS)  # a scheduled (its lease: 10 s), handed over by the API
    wake = w.receive()
    signal(w, "go")
    go = [m for m in w.receive() if m not in wake]
    w.deliver("d2", go)  # environment 2 caches the state: a scheduled, leased
    w.deliver("d1", wake)  # environment 1 runs a and commits its result
    assert RUNS["n1-a"] == 1
    w.clock.now += 60_000  # a's lease has passed (in environment 2's cached state it is still live)
    signal(w, "more")
    w.deliver(late_signal_to, w.receive())
    w.settle("d1")


def test_n1_a_stale_cache_does_not_run_an_answered_inline_step_again(world: Deliveries) -> None:
    n1(world, late_signal_to="d2")
    assert world.status() == "COMPLETED"
    assert RUNS["n1-a"] == 1


def test_n1_control_the_late_signal_reaches_a_current_cache(world: Deliveries) -> None:
    n1(world, late_signal_to="d1")
    assert world.status() == "COMPLETED"
    assert RUNS["n1-a"] == 1


# ------------------------------------------------------------------ N5 (chaos seed 534)
LIMITED_AFTER_SIGNAL = {
    "orbit": 1, "name": "n5-limited", "version": "1",
    "tasks": {"chaosfix.count": {"concurrency": {"limit": 1}}},
    "steps": {"approve": {"wait_for": "go"},
              "x": {"task": "chaosfix.count", "after": ["approve"], "input": {"v": "n5-x"}}},
    "output": "{% steps.x.output %}",
}


def n5(w: Deliveries, result_meanwhile: bool) -> list[Any]:
    """Environment 1 decides the signal (x scheduled, its slot taken, x sent); the signal's delete
    is lost. x runs. The signal comes back to environment 2, which finds the commit that handled it
    and carries out its effects again (`resent`) from the state it read: x still open. If x's result
    is decided by environment 1 after that read and before environment 2 takes x's slot (the
    interleave chaos seed 534 met), the execution ends and gives the slot back first, and the old
    code took it again for ever. Returns the limit counters' holders at the end."""
    from orbit.adapters.dynamodb.limits import DynamoLimits

    RUNS.clear()
    w.api("POST", "/definitions", LIMITED_AFTER_SIGNAL, 201)
    w.clock.now += 70_000  # a new task limit is in force 65 s after its first declaration
    w.api("POST", "/executions", {"workflow": "n5-limited", "id": findings.EID, "input": {}}, 201)
    w.settle("d1")  # waiting for the signal
    signal(w)
    w.deliver("d1", w.receive(), lose_delete=True)  # x scheduled and sent; the delete is lost
    assert w.work() == 1 and RUNS["n5-x"] == 1  # x runs; its result waits on the decision queue
    result = w.receive()
    gate = w.container("d2").engine.flow_control.gate
    real = gate.dispatch

    def after_the_result(*args: Any, **kw: Any) -> Any:
        if result_meanwhile and result:
            w.deliver("d1", [result.pop()])  # x's result decided elsewhere: the execution ends
        return real(*args, **kw)

    gate.dispatch = after_the_result
    w.redeliver_lost()
    w.deliver("d2", w.receive())  # the signal again: its commit's effects carried out again
    gate.dispatch = real
    if result:
        w.deliver("d1", result)
    w.settle("d1")
    w.settle("d2")
    return [c.holders for c in DynamoLimits(w.clients.dynamodb, w.stack.table).list_counters() if c.holders]


def test_n5_a_resent_dispatch_after_its_attempt_ended_gives_its_slot_back(world: Deliveries) -> None:
    assert n5(world, result_meanwhile=True) == []
    assert world.status() == "COMPLETED"
    assert RUNS["n5-x"] == 1


def test_n5_control_the_result_is_decided_after_the_resend(world: Deliveries) -> None:
    assert n5(world, result_meanwhile=False) == []
    assert world.status() == "COMPLETED"
    assert RUNS["n5-x"] == 1
