"""Nondeterminism detection compares what matters: each changed value diverges, naming it;
what does not change behaviour (a comment, a tuple for a list) does not."""

from __future__ import annotations

import orbit.testing
import pytest
from code_harness import Harness
from orbit.testing.replay import ReplayDiverged
from orbit.workflow import CodeRegistry, workflow

REG = CodeRegistry()


def echo(input, attempt):
    return {"echo": input}


def variant(sleep="1h", attempts=3, n=(1, 2), items=(1, 2, 3)):
    def fn(ctx, input):
        ctx.sleep(sleep)
        ctx.step("a.x", {"n": list(n)}, retry={"max_attempts": attempts}, timeout="30s")
        ctx.map("a.y", list(items))
        return "done"
    return fn


def recorded():
    wf = workflow("values", registry=CodeRegistry())(variant())
    h = Harness(wf, workers={"a.x": echo, "a.y": echo})
    h.start("values", {})
    h.run()
    assert h.describe()["status"] == "COMPLETED"
    return h.history()


CHANGES = {"fire_at_ms": variant(sleep="2h"), "retry": variant(attempts=4), "input": variant(n=(2, 1)),
           "items": variant(items=(1, 2))}


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_a_changed_value_diverges_naming_it(field):
    history = recorded()
    with pytest.raises(ReplayDiverged) as e:
        orbit.testing.replay(history, workflow("values", registry=REG)(CHANGES[field]))
    assert set(e.value.details["differs"]) == {field}, e.value.details
    assert field in str(e.value)


def test_the_same_calls_written_differently_replay_cleanly():
    history = recorded()

    def same(ctx, input):
        # written differently, same calls: a tuple where history holds a list, the retry as a dict
        ctx.sleep(3_600_000)
        ctx.step("a.x", {"n": (1, 2)}, retry={"max_attempts": 3, "backoff": "1s"}, timeout=30_000)
        ctx.map("a.y", (1, 2, 3))
        return "done"

    orbit.testing.replay(history, workflow("values", registry=REG)(same))


def test_a_child_with_another_input_diverges():
    def parent(ctx, input):
        return ctx.child("values-kid", {"v": 1})

    kid = workflow("values-kid", registry=REG)(lambda ctx, input: input)
    wf = workflow("values", registry=CodeRegistry())(parent)
    h = Harness(wf, kid)
    h.start("values", {})
    h.run()

    def other(ctx, input):
        return ctx.child("values-kid", {"v": 2})

    with pytest.raises(ReplayDiverged) as e:
        orbit.testing.replay(h.history(), workflow("values", registry=REG)(other))
    assert set(e.value.details["differs"]) == {"input"}
