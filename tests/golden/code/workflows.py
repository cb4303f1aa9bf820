"""Code workflows whose recorded histories are checked in next to this file.

Changing one of these functions in a way that changes its durable calls must
make `tests/unit/test_code_golden.py` fail: that is the point. If the change
is intended, re-record with `python tests/golden/code/record.py` and say why
in the commit.
"""

from __future__ import annotations

from typing import Any

import orbit
from orbit.workflow import CodeRegistry

REGISTRY = CodeRegistry()  # kept apart from the process-wide registry


@orbit.workflow("golden-kid", build="golden", registry=REGISTRY)
def kid(ctx: Any, input: Any) -> Any:
    return {"kid": ctx.step("misc.echo", input)}


@orbit.workflow("golden-tour", build="golden", registry=REGISTRY)
def tour(ctx: Any, input: Any) -> Any:
    """Every context method once."""
    ctx.progress({"stage": "start"})
    token = ctx.hook_token("go")
    first = ctx.step("misc.echo", {"token_len": len(token), "n": input["n"]}, retry={"max_attempts": 2})
    both = ctx.parallel(("misc.echo", {"p": 1}), orbit.Step("misc.echo", {"p": 2}, name="second"))
    squares = ctx.map("misc.square", [1, 2, 3, 4], concurrency=2)
    ctx.sleep("5m")
    ctx.wait_until(ctx.now_ms() + 60_000)
    try:
        ctx.step("misc.fail", {}, on_exhausted="continue_workflow")
    except orbit.StepFailed as e:
        failed = e.code
    approval = ctx.wait_for("go", timeout="1h")
    child = ctx.child("golden-kid", {"from": "tour"})
    ctx.progress({"stage": "done"})
    return {"first": first, "both": both, "squares": squares, "failed": failed, "approval": approval,
            "child": child, "now": ctx.now_ms(), "random": ctx.random(), "uuid": ctx.uuid()}


@orbit.workflow("golden-branches", build="golden", registry=REGISTRY)
def branches(ctx: Any, input: Any) -> Any:
    """Groups of branches (issue 14): parallel, map over functions, race, nesting, policies."""
    def held(c: Any) -> Any:
        return c.wait_for("go")

    def nap(c: Any) -> Any:
        c.sleep("5m")
        return c.now_ms()

    both = ctx.parallel(lambda c: c.step("misc.echo", {"p": 1}), nap, held,
                        lambda c: c.parallel(lambda d: d.step("misc.square", 3), lambda d: d.uuid()))
    squares = ctx.map([1, 2, 3, 4], lambda c, x, i: [i, c.step("misc.square", x)], concurrency=2)
    tolerated = ctx.map([1, 2], lambda c, x: c.step("misc.fail" if x == 2 else "misc.echo", x),
                        tolerated_failures=1)
    winner = ctx.race(timer=lambda c: c.sleep("1m"), work=lambda c: c.wait_for("never"))
    kids = ctx.parallel(lambda c: c.child("golden-kid", {"k": 1}), lambda c: c.child("golden-kid", {"k": 2}))
    return {"both": both, "squares": squares, "tolerated": tolerated, "winner": list(winner), "kids": kids}


@orbit.workflow("golden-scopes", build="golden", registry=REGISTRY)
def scopes(ctx: Any, input: Any) -> Any:
    """Scopes, children, wait_for_condition and hook metadata (issue 14)."""
    ctx.hook_token("late", metadata={"ask": "ops"})
    with ctx.scope() as s:
        ctx.parallel(lambda c: c.wait_for("late"), lambda c: (c.sleep("1m"), s.cancel("enough")))
    ctx.dispose_hook("late")
    with ctx.scope(shield=True):
        shielded = ctx.step("misc.echo", "shielded")
    kids = ctx.children([("golden-kid", 1),
                         {"workflow": "golden-kid", "input": 2, "parent_policy": "abandon"}])
    polled = ctx.wait_for_condition(lambda c, n: c.step("misc.square", n) if n < 10 else n, 2,
                                    until=lambda n: n >= 10, delay="10s", backoff=2)
    return {"cancelled": s.cancelled, "shielded": shielded, "kids": kids, "polled": polled}
