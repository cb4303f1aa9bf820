"""Fork (orbit fork) on the simulator: a new execution reuses the outputs of the steps that ended
before the chosen step, and runs that step and the rest on the workflow registered now."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from dsl_harness import definition, sim_with
from orbit.errors import ExecutionExists, NotFound, ValidationError

STEPS = {
    "a": {"task": "t.a", "input": {"v": "a"}},
    "b": {"task": "t.b", "input": {"v": "{% steps.a.output.v & 'b' %}"}},
    "c": {"task": "t.c", "input": {"v": "{% steps.b.output.v & 'c' %}"}},
}


def counted(sim: Any, suffix: str = "") -> Counter[str]:
    runs: Counter[str] = Counter()
    for name in "abc":
        def fn(input: Any, ctx: Any, name: str = name) -> Any:
            runs[name] += 1
            return {"v": input["v"] + suffix}
        sim.worker(f"t.{name}", fn)
    return runs


def test_fork_from_a_middle_step_reuses_earlier_outputs_and_links_both_ways() -> None:
    sim = sim_with(STEPS)
    runs = counted(sim)
    eid = sim.start("wf", {"n": 1}, id="orig")
    sim.run()
    assert sim.describe(eid)["status"] == "COMPLETED" and runs == {"a": 1, "b": 1, "c": 1}
    counted(sim, "!")  # the workers changed since
    fork = sim.fork(eid, "b", id="orig-2")
    sim.run()
    f = sim.describe(fork)
    assert fork == "orig-2" and f["status"] == "COMPLETED"
    assert f["input"] == {"n": 1}
    assert f["output"] == {"a": {"v": "a"}, "b": {"v": "ab!"}, "c": {"v": "ab!c!"}}
    assert f["forked_from"] == {"execution_id": "orig", "step": "b"}
    assert sim.describe(eid)["forked_to"] == ["orig-2"]
    assert runs["a"] == 1  # a kept its recorded output
    forked = next(e for e in sim.history(fork) if e["type"] == "ExecutionForked")
    assert list(forked["units"]) == ["a"]
    assert [e["type"] for e in sim.history(eid)][-1] == "ForkCreated"


def test_fork_runs_the_rest_on_the_definition_registered_now() -> None:
    sim = sim_with(STEPS)
    counted(sim)
    eid = sim.start("wf", {}, id="o-1")
    sim.run()
    sim.register(definition({**STEPS, "c": {"task": "t.c", "input": {"v": "{% steps.b.output.v & 'C2' %}"}}},
                            version="2"))
    fork = sim.fork(eid, "c")
    sim.run()
    f = sim.describe(fork)
    assert f["version"] == "2" and f["output"]["c"] == {"v": "abC2"} and fork.startswith("o-1-fork-")


def test_fork_of_a_failed_execution_from_its_first_step_runs_everything() -> None:
    sim = sim_with(STEPS)
    runs = counted(sim)
    eid = sim.start("wf", {}, id="o-2")
    sim.run()
    fork = sim.fork(eid, "a")
    sim.run()
    assert sim.describe(fork)["status"] == "COMPLETED" and runs == {"a": 2, "b": 2, "c": 2}


def test_bad_forks_write_nothing() -> None:
    sim = sim_with(STEPS)
    counted(sim)
    eid = sim.start("wf", {}, id="o-3")
    sim.run()
    before = sim.history(eid)
    with pytest.raises(ValidationError, match="execution .o-3. has no step .zz.; its steps: a, b, c"):
        sim.fork(eid, "zz", id="f-1")
    with pytest.raises(NotFound):
        sim.store.load("f-1")
    with pytest.raises(NotFound):
        sim.fork("missing", "a", id="f-2")
    with pytest.raises(ValidationError, match="from_step"):
        sim.fork(eid, "", id="f-3")
    with pytest.raises(ValidationError, match="id: a fork needs an id of its own"):
        sim.fork(eid, "b", id="o-3")
    sim.start("wf", {}, id="other")
    with pytest.raises(ExecutionExists, match="'other' already exists and is not a fork of 'o-3'"):
        sim.fork(eid, "b", id="other")
    assert sim.history(eid) == before


def test_a_repeated_fork_request_starts_one_fork() -> None:
    sim = sim_with(STEPS)
    runs = counted(sim)
    eid = sim.start("wf", {}, id="o-4")
    sim.run()
    assert sim.fork(eid, "b", id="f-4") == "f-4"
    first = sim.history("f-4")
    assert sim.fork(eid, "b", id="f-4") == "f-4"  # the client retried: its commit's sends go again
    assert sim.history("f-4") == first
    sim.run()
    fork = sim.history("f-4")
    assert sim.describe("f-4")["status"] == "COMPLETED" and runs["a"] == 1
    assert [e["type"] for e in fork].count("ExecutionForked") == 1
    assert sorted(e["step"] for e in fork if e["type"] == "StepSucceeded") == ["b", "c"]
    assert sim.describe(eid)["forked_to"] == ["f-4"]
    with pytest.raises(ExecutionExists):
        sim.fork(eid, "c", id="f-4")  # the same id from another step is another fork


def test_hostile_ids_and_steps_are_refused_briefly() -> None:
    sim = sim_with(STEPS)
    counted(sim)
    eid = sim.start("wf", {}, id="o-5")
    sim.run()
    with pytest.raises(ValidationError, match="id: must be at most 200 characters") as e:
        sim.fork(eid, "b", id="x" * 10_000)
    with pytest.raises(ValidationError, match="has no step 'yyy") as e:
        sim.fork(eid, "y" * 100_000)
    assert len(str(e.value)) < 300
    with pytest.raises(ValidationError, match="request_id: must be at most 200 characters"):
        sim.redrive(eid, "r" * 1000)
