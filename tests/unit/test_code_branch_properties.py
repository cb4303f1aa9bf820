"""Property: whatever order branch results arrive in, the execution ends with the same output and
the same units, and its history (whatever the order) replays cold to exactly itself."""

from __future__ import annotations

import orbit
from code_harness import Harness
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from orbit.workflow import CodeRegistry
from test_code_golden import replay

N = 4
REG = CodeRegistry()


@orbit.workflow("prop-branches", registry=REG)
def prop(ctx, input):
    def one(c, i):
        got = c.step(f"t.b{i}", i)
        if i % 2:
            c.sleep(f"{i}s")
        return [got, c.map(["x"], lambda d, x: d.step(f"t.b{i}", x))] if i == 3 else got
    return ctx.map(list(range(N)), one, concurrency=3, tolerated_failures=N)


def run(order: list[int]) -> Harness:
    h = Harness(prop, workers={f"t.b{i}": (lambda x, attempt: x) for i in range(N)})
    h.held.update(f"t.b{i}" for i in range(N))
    h.start("prop-branches")
    for i in order:
        h.release(f"t.b{i}")
        h.run()
    h.held.clear()
    h.answer_parked()
    h.run()
    return h


EXPECTED = run(list(range(N)))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.permutations(list(range(N))))
def test_any_arrival_order_gives_the_same_output_and_replays_to_itself(order):
    h = run(order)
    st_, want = h.state(), EXPECTED.state()
    assert st_.status == "COMPLETED", st_.error
    assert st_.output == want.output == [0, 1, 2, [3, ["x"]]]
    assert sorted(st_.units) == sorted(want.units)
    assert replay(prop, h.history("ex-1")) == []
