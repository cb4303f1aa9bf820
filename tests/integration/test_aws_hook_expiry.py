"""A hook row lost to a crash between its commit and its write is written again, on DynamoDB (moto),
with the provisional expiry and mark every other item of the young execution has; its young end
then leaves no item of it without its one expiry (crash_matrix's whole-table walk)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from crash_matrix import _check_retention
from orbit.aws import wiring as aws
from orbit.core.definition.retention import provisional_expiry_s

DAY_MS = 24 * 3600 * 1000
HOOKED = {"orbit": 1, "name": "hooked", "version": "1", "retention": "1d",
          "steps": {"hooked": {"wait_for": "hooked"}}, "output": "{% steps.hooked.output %}"}


class Died(BaseException):
    """The API function's process died at this call (nothing may catch it)."""


def hook_rows(clients: Any, table: str, eid: str) -> list[dict[str, Any]]:
    items = clients.dynamodb.scan(TableName=table)["Items"]
    return [i for i in items if i["pk"]["S"].startswith("HOOK#") and i["execution_id"]["S"] == eid]


@pytest.mark.parametrize("variant", ["before", "after"])
def test_a_hook_row_lost_to_a_crash_is_written_again_with_the_provisional_expiry(
        cloud: Any, clients: Any, stack: Any, clock: Any, variant: str) -> None:
    cloud.api("POST", "/definitions", HOOKED)
    events = aws.services().dynamodb.meta.events
    hits: list[str] = []

    def before(model: Any, params: Any, context: dict[str, Any], **_: Any) -> None:
        pk = (json.loads(params.get("body") or b"{}").get("Item") or {}).get("pk", {}).get("S", "")
        if model.name == "PutItem" and pk.startswith("HOOK#") and not hits:
            hits.append(pk)
            context["hk_die"] = True
            if variant == "before":
                raise Died("before the hook row")

    def after(context: dict[str, Any], **_: Any) -> None:
        if context.pop("hk_die", False):
            raise Died("after the hook row")

    events.register("before-call.dynamodb", before, unique_id="hk-die-before")
    events.register("after-call.dynamodb", after, unique_id="hk-die-after")
    try:
        with pytest.raises(Died):
            cloud.api("POST", "/executions", {"workflow": "hooked", "id": "h-1", "input": {}})
    finally:  # the session's client outlives this test
        events.unregister("before-call.dynamodb", unique_id="hk-die-before")
        events.unregister("after-call.dynamodb", unique_id="hk-die-after")
    assert len(hits) == 1 and len(hook_rows(clients, stack.table, "h-1")) == (variant == "after")
    clock.advance(60_000)
    # The client retries: the start is recognised and its commit's effects are re-sent.
    assert cloud.api("POST", "/executions", {"workflow": "hooked", "id": "h-1", "input": {}})[0] in (200, 201)
    cloud.run_until_idle()
    engine = aws.services().engine
    p = provisional_expiry_s(engine.load_state("h-1").created_at_ms, DAY_MS)
    rows = hook_rows(clients, stack.table, "h-1")
    assert [(int(r["expires_at"]["N"]), "prov" in r) for r in rows] == [(p, True)], rows
    token = engine.hook_token("h-1", "hooked")
    assert cloud.api("POST", f"/hooks/{token}", {"payload": 2})[0] == 202
    cloud.run_until_idle()
    assert engine.describe("h-1")["status"] == "COMPLETED"
    # Ended young: the end walked nothing, and every item of the execution carries P.
    assert _check_retention(SimpleNamespace(stack=stack, clients=clients), {"h-1"}) == []  # type: ignore[arg-type]
    assert {int(r["expires_at"]["N"]) for r in hook_rows(clients, stack.table, "h-1")} == {p}
