"""A hook row written again for a redelivered message carries the expiry of what is written for its
execution now (provisional while it is young), not whatever the last decision on the thread left.

The engine used to hand the expiry to `_carry_out` through a thread-local set by the decision;
`inline.recover` sends the last commit's effects itself, and called outside a decision it wrote the
hook row with no expiry at all: a row that never expires, since the retention sweeper pins only
items marked provisional and a young end does not walk the execution's items.
"""

from __future__ import annotations

import threading
from typing import Any

import orbit
import pytest
from orbit.core.definition.retention import provisional_expiry_s
from orbit.service import inline

from tests.unit.inline_world import Crash, World

R = 2 * 24 * 3600 * 1000


def double(v: int) -> int:
    return v * 2


@orbit.workflow("hook-after-run", build="b1", retention="2d")
def hook_after_run(ctx: Any, input: Any) -> Any:
    a = ctx.run(double, input["v"])  # inline: the commit recording it also registers the hook
    ctx.hook_token("approve")
    return {"a": a, "approved": ctx.wait_for("approve")}


def world(definition: bool) -> tuple[World, list[tuple[str, str, int | None, bool]]]:
    """A world whose store records every hook row written (execution, name, expiry, provisional)."""
    w = World({"t.step": lambda input, ctx: {"v": 1}})
    if definition:
        w.register({"orbit": 1, "name": "hk", "retention": "2d", "steps": {
            "a": {"task": "t.step", "inline": True}, "h": {"wait_for": "go", "after": ["a"]}}})
    else:
        w.registry.register(hook_after_run)
    rows: list[tuple[str, str, int | None, bool]] = []
    real = w.store.put_hook

    def put_hook(token: str, eid: str, name: str, expires: int | None = None,
                 provisional: bool = False) -> None:
        rows.append((eid, name, expires, provisional))
        real(token, eid, name, expires, provisional)

    w.store.put_hook = put_hook  # type: ignore[method-assign]
    return w, rows


def young_expiry(w: World, eid: str) -> int:
    return provisional_expiry_s(w.api.load_state(eid).created_at_ms, R)


def test_a_hook_row_lost_to_a_crash_is_written_again_with_the_provisional_expiry() -> None:
    """The start's commit registers the hook; the API dies before the hook row. The client's retry
    is recognised (the commit's effects are re-sent) and the row gets the provisional expiry."""
    w, rows = world(definition=True)
    real = w.store.put_hook

    def dies(*args: Any) -> None:
        w.store.put_hook = real  # type: ignore[method-assign]
        raise Crash("before the hook row")

    w.store.put_hook = dies  # type: ignore[method-assign]
    with pytest.raises(Crash):
        w.api.start("hk", None, {}, "e1")
    assert rows == []
    w.api.start("hk", None, {}, "e1")  # the client retries
    w.settle()
    assert rows and set(rows) == {("e1", "go", young_expiry(w, "e1"), True)}


def test_recover_re_sends_a_hook_row_with_the_expiry_of_the_state_outside_any_decision() -> None:
    """`inline.recover` re-sends the chain's last commit (the inline step's result and the hook it
    reached); on a thread where no decision ran it must still give the row its expiry."""
    w, rows = world(definition=False)
    w.api.start("hook-after-run", None, {"v": 2}, "e1")
    w.settle()
    state = w.api.load_state("e1")
    assert state.status == "RUNNING" and "approve" in state.hooks
    p = young_expiry(w, "e1")
    assert rows == [("e1", "approve", p, True)]
    rows.clear()
    engine = w.container()  # a fresh container: nothing cached, no decision made on its threads
    thread = threading.Thread(target=inline.recover, args=(engine, "e1", engine.load_state("e1")))
    thread.start()
    thread.join()
    assert rows == [("e1", "approve", p, True)]
    engine.handle({"kind": "signal", "execution_id": "e1", "id": "s1", "name": "approve", "payload": 7})
    w.settle()
    assert w.api.describe("e1")["output"] == {"a": 4, "approved": 7}
    assert w.store.expiry["e1"] == p  # ended young: the end kept the provisional expiry
