"""Update scenarios of the crash matrix (docs/updates.md): an update sent through the API while the
execution waits for its signal, to a code workflow (the handler changes a local the output shows)
and to a definition (delivered as the signal a `wait_for` step consumes); after the run, the same
update id asked again answers the one recorded result.

The API is asked with `timeout: 0` (it answers 202 at once): in the crash world the decider runs
only when the world pumps the queue, after the API call returned. A crashed API call is retried
with the same request, so the same update id: the update is recorded and run once however often
the validation and the send are repeated.
"""

from __future__ import annotations

from typing import Any

import orbit
from crash_code import BUILDS
from crash_world import EXECUTION, Scenario
from orbit.workflow import CodeRegistry

CODE_NAME = "crashmx-updates"
CODE_UNITS = ("1.crashmx.double", "2.wait_for(approval)")


def with_updates(ctx: Any, input: Any) -> Any:
    items: list[str] = []

    def add(item: Any) -> Any:
        items.append(item["sku"])
        return {"count": len(items)}

    def positive(item: Any) -> None:
        if item.get("qty", 0) <= 0:
            raise ValueError("qty must be positive")

    ctx.update_handler("add", add, validator=positive)
    a = ctx.step("crashmx.double", {"v": input["v"]})
    by = ctx.wait_for("approval")
    return {"a": a["v2"], "by": by["by"], "items": items}


BUILDS["updates"] = orbit.workflow(CODE_NAME, registry=CodeRegistry())(with_updates)

DEFINITION = {
    "orbit": 1, "name": "crashmx-updates-defn", "version": "1",
    "steps": {"first": {"task": "crashmx.double", "input": {"v": "{% input.v %}"}},
              "open": {"wait_for": "item", "after": ["first"]},
              "approve": {"wait_for": "approval", "after": ["open"]}},
    "updates": {"add": {"signal": "item", "validator": "{% update.qty > 0 ? true : 'qty must be positive' %}",
                        "result": "{% {'sku': steps.open.output.sku, 'first': steps.first.output.v2} %}"}},
    "output": {"item": "{% steps.open.output.sku %}", "by": "{% steps.approve.output.by %}"},
}

ITEM = {"sku": "A-1", "qty": 2}
# action -> (update name, request body, expected HTTP status, expected result when 200)
ACTIONS: dict[str, tuple[str, dict[str, Any], int, Any]] = {
    "code": ("add", {"input": ITEM, "update_id": "u-1", "timeout": 0}, 202, None),
    "code-again": ("add", {"input": ITEM, "update_id": "u-1", "timeout": 0}, 200, {"count": 1}),
    "defn": ("add", {"input": ITEM, "update_id": "u-1", "timeout": 0}, 202, None),
    "defn-again": ("add", {"input": ITEM, "update_id": "u-1", "timeout": 0}, 200, {"sku": "A-1", "first": 6}),
}
SIGNAL = ("approval", {"payload": {"by": "ops"}, "id": "approval-1"})
CODE = Scenario((), {"v": 3}, SIGNAL, code=(CODE_NAME, CODE_UNITS, "updates"), before_signal=("update:code",),
                after_signal=("update:code-again",))
DEFN = Scenario((DEFINITION,), {"v": 3}, SIGNAL, before_signal=("update:defn",),
                after_signal=("update:defn-again",))
OUTPUTS = {"code": {"a": 6, "by": "ops", "items": ["A-1"]}, "defn": {"item": "A-1", "by": "ops"}}


def send_update(world: Any, key: str) -> None:
    name, body, status, result = ACTIONS[key]
    got = world.api("POST", f"/executions/{EXECUTION}/updates/{name}", body, status)
    if status == 200:
        assert got["status"] == "COMPLETED" and got["error"] is None and got["result"] == result, got
    else:
        assert got["update_id"] == body["update_id"] and got["status"] == "ACCEPTED", got
