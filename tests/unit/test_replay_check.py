"""`orbit.testing.replay`: golden histories replay cleanly, a known-incompatible change fails
naming the first divergence, and anything that is not a history is refused clearly."""

from __future__ import annotations

import json
from pathlib import Path

import orbit.testing
import pytest
from orbit.core.definition import parse_definition
from orbit.errors import ValidationError
from orbit.testing.replay import ReplayDiverged
from orbit.workflow import CodeRegistry, workflow
from test_code_golden import GOLDEN, _workflow

DSL = GOLDEN.parent / "dsl"
GOOD = sorted(p for p in GOLDEN.glob("*.json") if not p.name.startswith("bad_"))
REG = CodeRegistry()


@pytest.mark.parametrize("path", GOOD, ids=[p.stem for p in GOOD])
def test_golden_code_histories_replay_cleanly(path):
    body = json.loads(path.read_text())
    orbit.testing.replay(path, _workflow(body["workflow"]))


@pytest.mark.parametrize("path", sorted(DSL.glob("*.json")), ids=lambda p: p.stem)
def test_golden_definition_histories_replay_cleanly(path):
    body = json.loads(path.read_text())
    orbit.testing.replay(body["history"], parse_definition(body["definition"]))


def test_a_history_that_records_another_call_fails_naming_both_calls():
    body = json.loads((GOLDEN / "bad_saga_wrong_task.json").read_text())
    with pytest.raises(ReplayDiverged) as e:
        orbit.testing.replay(body, _workflow(body["workflow"]))
    expect = body["expect_nondeterminism"]
    assert f"task({expect['recorded']})" in str(e.value) and f"task({expect['requested']})" in str(e.value)
    assert e.value.details["recorded"]["task"] == expect["recorded"]


def test_a_known_incompatible_change_fails_with_the_values_that_differ():
    body = json.loads((GOLDEN / "saga_success.json").read_text())
    saga = _workflow(body["workflow"])

    @workflow(saga.name, registry=REG)
    def changed(ctx, input):  # the same saga, but reserving with another input
        return saga.fn(_Retyped(ctx), input)

    with pytest.raises(ReplayDiverged) as e:
        orbit.testing.replay(body["history"], changed)
    assert "durable call #1" in str(e.value) and "input (sha256 " in str(e.value)
    assert set(e.value.details["differs"]) == {"input"}


class _Retyped:
    """Wraps a ctx so the first step's input gains a key (a change of behaviour at call #1)."""

    def __init__(self, ctx):
        self._ctx = ctx

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def step(self, task, input=None, **kw):
        if task == "inventory.reserve":
            input = {**input, "warehouse": "new"}
        return self._ctx.step(task, input, **kw)


def test_a_changed_output_of_a_completed_history_is_a_divergence():
    body = json.loads((GOLDEN / "tour.json").read_text())
    tour = _workflow(body["workflow"])

    @workflow(tour.name, registry=REG)
    def other(ctx, input):
        out = tour.fn(ctx, input)
        return {"wrapped": out}

    with pytest.raises(ReplayDiverged, match="the history completed with"):
        orbit.testing.replay(body["history"], other)


@pytest.mark.parametrize("bad, message", [
    ("[]", "expected a non-empty list"),
    ('{"history": 3}', "expected a non-empty list"),
    ("[1, 2]", "event #1"),
    ('[{"seq": 1, "timestamp_ms": 1, "type": "StepSucceeded", "step": "a", "attempt": 1}]', "begins with"),
    ("not json", "not JSON"),
])
def test_something_that_is_not_a_history_is_refused_clearly(tmp_path, bad, message):
    f = tmp_path / "h.json"
    f.write_text(bad)
    with pytest.raises(ValidationError, match=message):
        orbit.testing.replay(f, _workflow("golden-tour"))


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(ValidationError, match="not found"):
        orbit.testing.replay(Path(tmp_path / "nope.json"), _workflow("golden-tour"))


def test_a_definition_that_adds_a_step_diverges_on_a_history_that_never_ran_it():
    body = json.loads((DSL / "saga.json").read_text())
    changed = json.loads(json.dumps(body["definition"]))
    changed["steps"]["audit"] = {"task": "audit.log", "after": ["reserve"]}
    with pytest.raises(ReplayDiverged, match="asks for step 'audit'"):
        orbit.testing.replay(body["history"], parse_definition(changed))
