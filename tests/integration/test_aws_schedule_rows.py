"""GET /schedules on the DynamoDB store survives any stored row (issue 25 item 5): a row whose
state is not JSON, one whose config no longer parses, one whose next occurrence lies past 9999."""

from __future__ import annotations

import json
from typing import Any

from orbit.adapters.dynamodb.schedules import LIST_PK, DynamoScheduleStore
from orbit.service.http import handle_request

from tests.unit.test_schedule_service import build


def test_the_listing_lists_every_stored_row_with_what_is_wrong(stack: Any, clients: Any) -> None:
    svc, engine, clock, arm = build()
    svc.store = store = DynamoScheduleStore(clients.dynamodb, stack.table)
    assert handle_request(engine, "POST", "/schedules",
                          json.dumps({"id": "ok", "workflow": "wf", "every": "1h"}), {})[0] == 201
    good = store.get("ok")[0]
    late = {"cron": "0 0 1 1 *", "start": "9999-12-31T23:59:00Z"}
    store.put("late", {**good, "config": {**good["config"], "id": "late", "spec": late}}, None)
    store.put("junk", {"config": {"id": "junk", "workflow": "wf", "spec": {"every": "no"}}}, None)
    clients.dynamodb.put_item(TableName=stack.table, Item={
        "pk": {"S": "SCHED#raw"}, "sk": {"S": "SCHED"}, "rev": {"N": "1"}, "state": {"S": "{not json"},
        "gsi2pk": {"S": LIST_PK}, "gsi2sk": {"S": "raw"}})
    status, body = handle_request(engine, "GET", "/schedules", None, {})
    assert status == 200, body
    rows = {r["id"]: r for r in body["schedules"]}
    assert set(rows) == {"ok", "late", "junk", "raw"}
    assert rows["ok"]["next_occurrence"] == "2027-01-01T01:00:00Z" and rows["late"]["next_occurrence"] is None
    assert "spec.every" in rows["junk"]["problem"] and "not a JSON object" in rows["raw"]["problem"]
