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
