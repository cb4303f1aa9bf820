"""DynamoLimits' token buckets, dropped starts, pointers and listings (adapters/dynamodb/limits.py
has the counters and lines; the key layout is described there)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from orbit.adapters.dynamodb.codec import n, num, s, text
from orbit.core.flow.bucket import Level, reserve
from orbit.core.flow.gates import Bucket
from orbit.core.flow.order import Counter

DROP_KEEP_S = 7 * 86_400
FAILED = ("ConditionalCheckFailedException", "TransactionCanceledException")


class LimitsReads:
    """Mixin of DynamoLimits: `_db`, `table`, `_pointer_key`, `_line_pk` and `read` come from it."""

    _db: Any
    table: str
    _pointer_key: Any
    _line_pk: Any
    read: Any

    # --------------------------------------------------------- buckets
    def reserve(self, bucket: Bucket, now_ms: int) -> int | None:
        key = {"pk": s(f"FLOW#R#{bucket.scope}"), "sk": s("R")}
        for _ in range(20):
            item = self._db.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
            old = Level(num(item, "lv"), num(item, "at")) if item else None
            level, delay = reserve(
                old, bucket.rate, bucket.period_ms, bucket.burst, now_ms, bucket.on_exceed == "wait"
            )
            if level is None:
                return None
            new = {
                **key,
                "lv": n(level.level),
                "at": n(level.at_ms),
                "nm": s(bucket.name),
                "ky": s(bucket.key),
                "rt": n(bucket.rate),
                "pd": n(bucket.period_ms),
                "bs": n(bucket.burst),
                "gsi1pk": s("FLOWR"),
                "gsi1sk": s(bucket.scope),
            }
            cond = "attribute_not_exists(pk)" if old is None else "lv = :lv AND #at = :at"
            kw: dict[str, Any] = (
                {}
                if old is None
                else {
                    "ExpressionAttributeValues": {":lv": n(old.level), ":at": n(old.at_ms)},
                    "ExpressionAttributeNames": {"#at": "at"},
                }
            )
            try:
                self._db.put_item(TableName=self.table, Item=new, ConditionExpression=cond, **kw)
                return delay
            except ClientError as e:
                if str(e.response.get("Error", {}).get("Code", "")) not in FAILED:
                    raise
        raise RuntimeError(f"flow: rate limit {bucket.name!r} key {bucket.key!r}: too much contention")

    def where(self, holder: str) -> str | None:
        """The scope `holder` waits on, or None."""
        item = self._db.get_item(TableName=self.table, Key=self._pointer_key(holder)).get("Item")
        return text(item, "scope") if item else None

    # ------------------------------------------------------------ drops
    def record_drop(self, holder: str, reason: str, now_ms: int) -> None:
        self._db.put_item(
            TableName=self.table,
            Item={
                "pk": s(f"FLOW#D#{holder}"),
                "sk": s("D"),
                "reason": s(reason),
                "at": n(now_ms),
                "expires_at": n(now_ms // 1000 + DROP_KEEP_S),
            },
        )

    def dropped(self, holder: str) -> dict[str, Any] | None:
        item = self._db.get_item(TableName=self.table, Key={"pk": s(f"FLOW#D#{holder}"), "sk": s("D")}).get(
            "Item"
        )
        return {"reason": text(item, "reason"), "at_ms": num(item, "at")} if item else None

    # ---------------------------------------------------------- listing
    def _scopes(self, kind: str) -> list[str]:
        out: list[str] = []
        kw: dict[str, Any] = {}
        while True:
            page = self._db.query(
                TableName=self.table,
                IndexName="gsi1",
                KeyConditionExpression="gsi1pk = :g",
                ExpressionAttributeValues={":g": s(kind)},
                **kw,
            )
            out += [str(i["gsi1sk"]["S"]) for i in page.get("Items", [])]
            if "LastEvaluatedKey" not in page or len(out) >= 1000:
                return out
            kw = {"ExclusiveStartKey": page["LastEvaluatedKey"]}

    def list_counters(self) -> list[Counter]:
        return [c for c in (self.read(scope) for scope in self._scopes("FLOW")) if c is not None]

    def list_buckets(self) -> list[dict[str, Any]]:
        out = []
        for scope in self._scopes("FLOWR"):
            item = self._db.get_item(
                TableName=self.table, Key={"pk": s(f"FLOW#R#{scope}"), "sk": s("R")}
            ).get("Item")
            if item:
                out.append(
                    {
                        "scope": scope,
                        "name": text(item, "nm"),
                        "key": text(item, "ky"),
                        "rate": num(item, "rt"),
                        "period_ms": num(item, "pd"),
                        "burst": num(item, "bs"),
                        "level_ms": num(item, "lv"),
                        "at_ms": num(item, "at"),
                    }
                )
        return out

    def line(self, scope: str, limit: int = 20) -> list[dict[str, Any]]:
        c = self.read(scope)
        rows: list[dict[str, Any]] = []
        for p, tenant in sorted(c.waiting) if c is not None else ():
            items = self._db.query(
                TableName=self.table,
                KeyConditionExpression="pk = :pk",
                Limit=limit,
                ExpressionAttributeValues={":pk": s(self._line_pk(scope, p, tenant))},
            ).get("Items", [])
            for i in items:
                since, _, holder = str(i["sk"]["S"]).partition("#")
                rows.append({"holder": holder, "priority": p, "tenant": tenant, "since_ms": int(since)})
        return sorted(rows, key=lambda r: (r["priority"], r["since_ms"], r["holder"]))[:limit]
