"""moto's DynamoDB Query with the local stack's speed fix (`orbit.local.moto_speed_dynamodb`) gives the
answers moto's own code gives: every query below runs through both and is compared."""

from __future__ import annotations

from typing import Any

import moto.dynamodb.models.table as table_model
import pytest
from moto_speed_table import inprocess_table, orig, speed_applied


@pytest.fixture
def ddb() -> Any:
    with inprocess_table() as db:
        for p in ("EXEC#a", "EXEC#b", "EXEC#c"):
            # written out of order, with bodies of different sizes (the size cap counts them)
            for i in (7, 3, 12, 1, 9, 30, 2, 15, 4, 22, 5):
                db.put_item(
                    TableName="t",
                    Item={
                        "pk": {"S": p},
                        "sk": {"S": f"C#{i:012d}"},
                        "n": {"N": str(i)},
                        "g": {"S": "even" if i % 2 == 0 else "odd"},
                        "body": {"B": bytes(1000 * i)},
                    },
                )
            db.put_item(TableName="t", Item={"pk": {"S": p}, "sk": {"S": "SNAP"}, "n": {"N": "0"}})
            db.put_item(TableName="t", Item={"pk": {"S": p}, "sk": {"S": "A#INDEX"}, "n": {"N": "-1"}})
        yield db


QUERIES: list[dict[str, Any]] = [
    {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "EXEC#b"}}},
    {
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": {"S": "EXEC#b"}},
        "ScanIndexForward": False,
        "Limit": 3,
    },
    {
        "KeyConditionExpression": "pk = :p AND sk BETWEEN :lo AND :hi",
        "ScanIndexForward": False,
        "Limit": 1,
        "ExpressionAttributeValues": {
            ":p": {"S": "EXEC#a"},
            ":lo": {"S": "C#"},
            ":hi": {"S": "C#000000000010"},
        },
    },
    {
        "KeyConditionExpression": "pk = :p AND sk BETWEEN :lo AND :hi",
        "Limit": 4,
        "ExpressionAttributeValues": {
            ":p": {"S": "EXEC#a"},
            ":lo": {"S": "C#000000000003"},
            ":hi": {"S": "C#~"},
        },
    },
    {
        "KeyConditionExpression": "pk = :p AND begins_with(sk, :c)",
        "Limit": 5,
        "ExpressionAttributeValues": {":p": {"S": "EXEC#c"}, ":c": {"S": "C#"}},
    },
    {
        "KeyConditionExpression": "pk = :p AND sk > :c",
        "ScanIndexForward": False,
        "ExpressionAttributeValues": {":p": {"S": "EXEC#c"}, ":c": {"S": "C#000000000009"}},
    },
    {
        "KeyConditionExpression": "pk = :p AND sk <= :c",
        "ExpressionAttributeValues": {":p": {"S": "EXEC#c"}, ":c": {"S": "C#000000000009"}},
    },
    {
        "KeyConditionExpression": "pk = :p AND sk = :c",
        "ExpressionAttributeValues": {":p": {"S": "EXEC#c"}, ":c": {"S": "SNAP"}},
    },
    {
        "KeyConditionExpression": "pk = :p AND begins_with(sk, :c)",
        "FilterExpression": "n > :m",
        "ProjectionExpression": "sk, n",
        "ExpressionAttributeValues": {":p": {"S": "EXEC#a"}, ":c": {"S": "C#"}, ":m": {"N": "4"}},
    },
    {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "EXEC#none"}}},
    {
        "IndexName": "gsi",
        "KeyConditionExpression": "g = :g",
        "Limit": 4,
        "ExpressionAttributeValues": {":g": {"S": "even"}},
    },
    {
        "IndexName": "gsi",
        "KeyConditionExpression": "g = :g AND sk > :c",
        "ScanIndexForward": False,
        "Limit": 5,
        "ExpressionAttributeValues": {":g": {"S": "odd"}, ":c": {"S": "C#000000000003"}},
    },
]


def pages(db: Any, query: dict[str, Any]) -> list[Any]:
    """Every page of the query (following LastEvaluatedKey), as DynamoDB answered each."""
    out, kw = [], dict(query)
    while True:
        page = db.query(TableName="t", **kw)
        out.append((page["Items"], page["Count"], page["ScannedCount"], page.get("LastEvaluatedKey")))
        if "LastEvaluatedKey" not in page:
            return out
        kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def test_the_fix_is_installed_and_answers_as_moto_does(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = table_model.Table.query
    assert hasattr(fast, "original") is speed_applied()
    with_fix = [pages(ddb, q) for q in QUERIES]
    monkeypatch.setattr(table_model.Table, "query", orig(fast))
    if hasattr(table_model.Table, "sorted_items"):  # not in every moto (5.0.0 has none)
        monkeypatch.setattr(table_model.Table, "sorted_items", orig(table_model.Table.sorted_items))
    assert [pages(ddb, q) for q in QUERIES] == with_fix
    assert [len(p) for p in with_fix][:4] == [1, 5, 8, 3]  # paged: Limit and LastEvaluatedKey at work
