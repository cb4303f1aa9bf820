"""A warm decision of a wide code parallel costs what changed, not the width (issue 27, section 2).

A group used to find the branches whose units ended by two set operations over every live unit
(`state.active`) per decision; it now reads `state.left` (the units that left `active`, in order)
past where it stood. Counted, not timed: a warm decision looks at no live unit of the 2,000.
"""

from __future__ import annotations

from typing import Any

from orbit.core.decider.decide import decide
from orbit.core.history.messages import ResultMessage, StartMessage, WakeMessage
from orbit.core.history.model import apply
from orbit.core.history.state import ExecutionState
from orbit.service.replay_host import CodeRuntime
from orbit.workflow import CodeRegistry, workflow

HOUR = 3_600_000


class _Ids:
    def __init__(self) -> None:
        self.n = 0

    def token(self) -> str:
        self.n += 1
        return f"{self.n:032x}"


class CountingActive(dict):  # type: ignore[type-arg]
    """`state.active` that counts the looks at every live unit (iteration, a keys view, a copy)."""

    looks = 0

    def __iter__(self) -> Any:
        CountingActive.looks += 1
        return super().__iter__()

    def keys(self) -> Any:
        CountingActive.looks += 1
        return super().keys()


def _fan(reg: CodeRegistry) -> Any:
    def branch(ctx: Any) -> int:
        n = ctx.step("w.work", 1)["n"]
        ctx.sleep("1h")
        return int(n)

    @workflow("warm-wide", build="t", registry=reg)
    def fan(ctx: Any, n: int) -> Any:
        return sum(ctx.parallel(*[branch] * n))

    return fan


def test_a_warm_decision_of_2000_branches_looks_at_no_live_unit_and_ends_right() -> None:
    reg = CodeRegistry()
    fan = _fan(reg)
    n, ids, state = 2_000, _Ids(), ExecutionState("w")
    rt = CodeRuntime(reg)

    def one(msg: Any, now: int) -> None:
        for r in decide(fan, state, msg, now, ids, code_runtime=rt).events:
            apply(state, r)

    one(StartMessage("w", "start", workflow="warm-wide", input=n), 0)
    state.active = CountingActive(state.active)
    steps = [k for k in state.active if k.endswith("w.work")]
    assert len(steps) == n
    looks = []
    for i, key in enumerate(steps, start=1):
        CountingActive.looks = 0
        one(ResultMessage("w", f"r-{key}", unit=key, token=state.units[key].token or "", output={"n": 1}), i)
        looks.append(CountingActive.looks)
    assert rt.stats["cold"] == 1, rt.stats  # every result decided warm
    assert max(looks) == 0, f"warm decisions looked at every live unit: {sorted(set(looks))}"
    for i in range(1, n + 1):
        one(WakeMessage("w", f"w-{i}"), HOUR + i)
    assert state.status == "COMPLETED" and state.output == n, (state.status, state.error)


def test_a_state_loaded_again_resumes_the_waiting_branches_from_it() -> None:
    """The instance goes on against another state object (loaded again, found to extend what it
    saw): the group cannot read what ended from the old object, so every waiting branch looks."""
    reg = CodeRegistry()
    fan = _fan(reg)
    ids, state = _Ids(), ExecutionState("w")
    rt = CodeRuntime(reg)
    for r in decide(fan, state, StartMessage("w", "start", workflow="warm-wide", input=3), 0, ids,
                    code_runtime=rt).events:
        apply(state, r)
    steps = [k for k in state.active if k.endswith("w.work")]
    for i, key in enumerate(steps, start=1):
        state = ExecutionState.from_dict(state.to_dict())  # a state loaded again for each decision
        m = ResultMessage("w", f"r-{key}", unit=key, token=state.units[key].token or "", output={"n": 1})
        for r in decide(fan, state, m, i, ids, code_runtime=rt).events:
            apply(state, r)
    assert sum(1 for k in state.active if k.endswith("sleep()")) == 3  # every branch went on to its sleep
    assert rt.stats["warm"] >= 3, rt.stats  # the instance went on against the states loaded again
    for i in range(1, 4):
        state = ExecutionState.from_dict(state.to_dict())
        for r in decide(fan, state, WakeMessage("w", f"w-{i}"), HOUR + i, ids, code_runtime=rt).events:
            apply(state, r)
    assert state.status == "COMPLETED" and state.output == 3, (state.status, state.error)
