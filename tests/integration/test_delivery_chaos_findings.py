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
