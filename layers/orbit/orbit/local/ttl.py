"""DynamoDB's TTL on the emulator: moto stores `expires_at` but never deletes (LOCAL-AWS-FACTS).

`expire(client, table, now_s)` deletes every item whose `expires_at` (epoch seconds) has passed,
as AWS's background sweep does (there, up to a few days late), and returns the stream records
such a deletion produces: `eventName` REMOVE, `userIdentity` the DynamoDB service, the keys
(the table's stream is KEYS_ONLY). Feeding them to the retention function is what AWS's event
source mapping does with the template's filter (`matches_retention_filter`).
"""

from __future__ import annotations

from typing import Any

TTL_ATTRIBUTE = "expires_at"


def expire(client: Any, table: str, now_s: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    kw: dict[str, Any] = {"TableName": table, "FilterExpression": "#t <= :now",
                          "ExpressionAttributeNames": {"#t": TTL_ATTRIBUTE},
                          "ExpressionAttributeValues": {":now": {"N": str(now_s)}},
                          "ProjectionExpression": "pk, sk"}
    while True:
        page = client.scan(**kw)
        for item in page["Items"]:
            keys = {"pk": item["pk"], "sk": item["sk"]}
            client.delete_item(TableName=table, Key=keys)
            records.append({
                "eventID": f"ttl-{len(records)}", "eventName": "REMOVE", "eventSource": "aws:dynamodb",
                "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
                "dynamodb": {"Keys": keys, "SequenceNumber": str(now_s * 1000 + len(records)),
                             "StreamViewType": "KEYS_ONLY"},
            })
        if "LastEvaluatedKey" not in page:
            return records
        kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def matches_retention_filter(record: dict[str, Any]) -> bool:
    """The template's FilterCriteria for the retention function: TTL removals of `BLOB#* / R#*|W#*`."""
    keys = record.get("dynamodb", {}).get("Keys", {})
    return (record.get("eventName") == "REMOVE"
            and record.get("userIdentity", {}).get("principalId") == "dynamodb.amazonaws.com"
            and keys.get("pk", {}).get("S", "").startswith("BLOB#")
            and keys.get("sk", {}).get("S", "").startswith(("R#", "W#")))
