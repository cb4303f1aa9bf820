"""A `for` step (or a code workflow's `ctx.map`) over more than MAX_FOR_ITEMS items fails that step
with TOO_MANY_ITEMS, naming the limit (issue 25, Low): a `for` over a million items was accepted
and took 177 s and 2.4 GB. The million runs in a child process with a time limit."""

from __future__ import annotations

from typing import Any

import orbit
from orbit.core.runtime.commands import MAX_FOR_ITEMS
from orbit.workflow import CodeRegistry

from tests.unit.child_run import run_in_child
from tests.unit.code_harness import Harness
from tests.unit.dsl_harness import sim_with


def test_a_for_over_a_million_items_fails_the_step_within_a_time_limit() -> None:
    got = run_in_child("""
        sim = Simulator()
        sim.register(definition({"each": {"compute": "{% item * 2 %}", "for": "{% input.items %}"}}))
        sim.start("wf", {"items": list(range(1_000_000))}, id="e1")
        sim.run_until_idle()
        d = sim.describe("e1")
        emit([d["status"], d["steps"]["each"]["error"], len(d["steps"])])
    """, 90, "a `for` that starts a million elements")
    status, error, units = got
    assert status == "FAILED" and units == 1, got
    assert error["code"] == "TOO_MANY_ITEMS" and not error["retryable"]
    assert error["message"].startswith(
        f"each.for: gave 1000000 items, more than the limit of {MAX_FOR_ITEMS}")


def test_one_item_past_the_limit_fails_the_step_and_on_failure_continue_goes_on() -> None:
    sim = sim_with({"each": {"compute": "{% item %}", "for": f"{{% [0..{MAX_FOR_ITEMS}] %}}",
                             "on_failure": "continue"},
                    "after": {"compute": "{% 'went on' %}", "after": ["each"]}})
    sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    d = sim.describe("e1")
    assert d["steps"]["each"]["error"]["code"] == "TOO_MANY_ITEMS", d["steps"]["each"]
    assert d["status"] == "COMPLETED" and d["steps"]["after"]["output"] == "went on"


def test_a_code_map_past_the_limit_fails_the_run_naming_it() -> None:
    reg = CodeRegistry()

    @orbit.workflow("too-wide", registry=reg)
    def wide(ctx: Any, input: Any) -> Any:
        return ctx.map("double", list(range(MAX_FOR_ITEMS + 1)))

    h = Harness(wide, workers={"double": lambda x, attempt: 2 * x})
    h.start("too-wide")
    d = h.describe()
    assert d["status"] == "FAILED" and d["error"]["code"] == "TOO_MANY_ITEMS", d["error"]
    assert f"gave {MAX_FOR_ITEMS + 1} items" in d["error"]["message"] and not h.calls


def test_a_branch_map_past_the_limit_fails_the_run_before_any_branch_runs() -> None:
    reg = CodeRegistry()
    ran: list[int] = []

    @orbit.workflow("too-many-branches", registry=reg)
    def wide(ctx: Any, input: Any) -> Any:
        return ctx.map(list(range(MAX_FOR_ITEMS + 1)), lambda c, item: ran.append(item))

    h = Harness(wide)
    h.start("too-many-branches")
    d = h.describe()
    assert d["status"] == "FAILED" and d["error"]["code"] == "TOO_MANY_ITEMS", d["error"]
    assert f"gave {MAX_FOR_ITEMS + 1} items" in d["error"]["message"] and not ran
