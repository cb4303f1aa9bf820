"""Search attributes on moto: `--where` finds executions through their attribute rows (gsi1), with
status, workflow, start-time and cursor, and the rows expire with the execution."""

from __future__ import annotations

from typing import Any

from test_aws_archive import PAST_EXPIRY_MS, _expire_all


def test_search_attributes_are_listed_from_the_table_and_expire_with_the_execution(
        cloud: Any, clients: Any, stack: Any, clock: Any) -> None:
    tagged = {"orbit": 1, "name": "tagged", "version": "1", "retention": "1d",
              "attributes": {"tier": "{% input.tier %}", "n": "{% input.n %}"},
              "steps": {"s": {"compute": "{% input.n * 2 %}"}}}
    cloud.api("POST", "/definitions", tagged)
    for i, tier in enumerate(["gold", "silver", "gold"]):
        start = {"workflow": "tagged", "id": f"t-{i}", "input": {"tier": tier, "n": i}}
        assert cloud.api("POST", "/executions", start)[0] == 201
        cloud.run_until_idle()
        clock.advance(60_000)

    def listed(**query: str) -> list[str]:
        status, body = cloud.api("GET", "/executions", query=query)
        assert status == 200, body
        return [e["execution_id"] for e in body["executions"]]

    assert listed(where="tier=gold") == ["t-2", "t-0"]
    from orbit.aws import wiring as aws

    aws.services().engine._cache.clear()  # a cold load reads the partition: the attribute rows are no commits
    status, desc = cloud.api("GET", "/executions/t-1")
    assert status == 200 and desc["attributes"] == {"tier": "silver", "n": 1}, desc
    assert listed(where="n=1") == ["t-1"]
    assert listed(where="tier=gold", status="COMPLETED", limit="1") == ["t-2"]
    assert listed(where="tier=gold", workflow="other") == []
    assert listed(where="tier=gold", started_before="2026-01-01T00:02:00Z") == ["t-0"]
    status, body = cloud.api("GET", "/executions", query={"where": "tier=gold", "limit": "1"})
    assert body["executions"][0]["attributes"] == {"tier": "gold", "n": 2} and body["next_cursor"]
    status, body = cloud.api("GET", "/executions",
                             query={"where": "tier=gold", "limit": "1", "cursor": body["next_cursor"]})
    assert [e["execution_id"] for e in body["executions"]] == ["t-0"]
    clock.advance(PAST_EXPIRY_MS)
    _expire_all(clients, stack, clock.now_ms())
    assert listed(where="tier=gold") == []
