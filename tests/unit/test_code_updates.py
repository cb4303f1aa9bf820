"""Updates in the pure core and on the in-memory engine: where handlers run, how they replay,
the decider's one-effect rule, and the `updates:` checks of a definition."""

from __future__ import annotations

from typing import Any

import orbit
import pytest
from orbit.adapters.memory import SeededIds
from orbit.core.decider.decide import decide
from orbit.core.definition.validate import validate_definition
from orbit.core.history.messages import UpdateMessage
from orbit.errors import UpdateFailed, UpdateRefused
from orbit.service.replay_host import default_runtime
from orbit.workflow import CodeRegistry

from tests.unit.code_harness import ID, Harness

REG = CodeRegistry()


@orbit.workflow("upd-positions", registry=REG)
def positions(ctx: Any, input: Any) -> Any:
    log: list[str] = []
    ctx.update_handler("note", lambda x: (log.append(x), len(log))[1])
    a = ctx.step("slow", {"n": 1})
    seen_after_a = list(log)
    b, c = ctx.parallel(("slow", {"n": 2}), ("slow", {"n": 3}))
    seen_after_bc = list(log)
    ctx.wait_for("go")
    return {"a": seen_after_a, "bc": seen_after_bc, "all": log, "sum": a + b + c}


def _harness() -> Harness:
    h = Harness(positions, workers={"slow": lambda input, attempt: input["n"]})
    h.held.add("slow")
    return h


def test_a_handler_runs_where_the_replay_blocks_and_replays_there_cold() -> None:
    h = _harness()
    h.start("upd-positions", {})
    assert h.update(ID, "note", "while-a") == 1  # blocked at position 1 (step a in flight)
    h.release("slow")  # a, then b and c, run; the workflow waits for `go`
    assert h.update(ID, "note", "at-go") == 2
    done = [e for e in h.history() if e["type"] == "UpdateCompleted"]
    assert [e["position"] for e in done] == [1, 4]
    default_runtime().forget()  # the next decision replays from the start
    h.signal("go")
    assert h.describe()["output"] == {"a": ["while-a"], "bc": ["while-a"], "all": ["while-a", "at-go"],
                                      "sum": 6}


def test_the_same_update_id_in_two_messages_is_recorded_once() -> None:
    h = _harness()
    h.start("upd-positions", {})
    state = h.state()
    for mid in ("update:u-1", "update:u-1-again"):
        decision = decide(positions, state, UpdateMessage(ID, mid, "u-1", "note", "x"), 0, SeededIds("t"))
        types = [type(e.event).__name__ for e in decision.events]
        assert types.count("UpdateAccepted") == (mid == "update:u-1")
    assert list(state.updates) == ["u-1"]


def test_refusals_and_failures() -> None:
    @orbit.workflow("upd-guarded", registry=CodeRegistry())
    def guarded(ctx: Any, input: Any) -> Any:
        ctx.update_handler("set", lambda x: x, validator=lambda x: x is not None)
        ctx.update_handler("step", lambda x: ctx.step("slow", {"n": 1}))
        ctx.wait_for("go")
        return None

    h = Harness(guarded)
    h.start("upd-guarded", {})
    before = h.history()
    with pytest.raises(UpdateRefused, match="'set' was refused by its validator"):
        h.update(ID, "set", None)
    assert h.history() == before
    with pytest.raises(UpdateFailed, match=r"update handler 'step' called ctx\.step\(\)"):
        h.update(ID, "step", 1)
    assert h.update(ID, "set", 5) == 5


def test_definition_updates_are_checked() -> None:
    doc = {"orbit": 1, "name": "d", "steps": {"w": {"wait_for": "item"}},
           "updates": {"ok": {"signal": "item", "validator": "{% update.n > 0 %}",
                              "result": "{% update.n %}"},
                       "lost": {"signal": "nobody"},
                       "bad": {"signal": "item", "validator": "yes", "extra": 1},
                       "reads": {"signal": "item", "result": "{% nope.x %}"}}}
    problems = {p.path: p.message for p in validate_definition(doc)}
    assert "updates.ok" not in " ".join(problems)
    assert "no `wait_for: nobody` step" in problems["updates.lost.signal"]
    assert "must be an expression" in problems["updates.bad.validator"]
    assert "updates.bad.extra" in problems
    assert any(k.startswith("updates.reads.result") for k in problems)


def test_a_run_takes_a_bounded_number_of_updates(monkeypatch: pytest.MonkeyPatch) -> None:
    from orbit.service import updates

    monkeypatch.setattr(updates, "MAX_UPDATES", 2)
    h = _harness()
    h.start("upd-positions", {})
    assert h.update(ID, "note", "1") == 1
    assert h.update(ID, "note", "2") == 2
    with pytest.raises(UpdateRefused, match="has had 2 updates, the most one run keeps"):
        h.update(ID, "note", "3")
    known = list(h.state().updates)[1]
    assert h.update(ID, "note", "2", update_id=known) == 2  # a known id still answers its result


def test_a_handler_that_raised_after_changing_a_local_changes_it_again_on_replay() -> None:
    @orbit.workflow("upd-raises", registry=CodeRegistry())
    def raises(ctx: Any, input: Any) -> Any:
        seen: list[Any] = []

        def half_done(x: Any) -> Any:
            seen.append(x)
            raise orbit.TaskError("HALF", "changed a local, then gave up", retryable=False)

        ctx.update_handler("half", half_done)
        ctx.wait_for("go")
        return seen

    h = Harness(raises)
    h.start("upd-raises", {})
    with pytest.raises(UpdateFailed, match="gave up") as e:
        h.update(ID, "half", 7)
    assert e.value.code == "HALF"
    default_runtime().forget()
    h.signal("go")
    assert h.describe()["output"] == [7]
