"""Count what AWS would bill for the requests a botocore client makes (used by bench_cost.py).

moto's ConsumedCapacity is a constant, so DynamoDB capacity is estimated from
the items themselves, the way DynamoDB bills on-demand tables:
- a write is ceil(KB) of the larger of the old and new item (a failed conditional
  write is billed too), plus, per GSI, ceil(KB of the projected item) for each
  index write: one when the row enters or leaves the index or a projected
  attribute changes, two (delete + put) when the index key changes, none when
  nothing the index holds changed (the GSI projections are read from the table);
- a read is ceil(4 KB) of what it returns (a Query's items summed, a
  BatchGetItem's items one by one), halved when eventually consistent.
SQS is billed per request and per 64 KB chunk of a request's payload.
The meter also keeps the thread CPU time spent inside AWS calls, so a handler's
own compute can be told apart from moto's.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from typing import Any


def item_size(item: dict[str, Any] | None) -> int:
    """DynamoDB's item size: attribute names plus values (numbers approximated as digits/2 + 1)."""
    size = 0
    for name, value in (item or {}).items():
        size += len(name.encode())
        ((kind, v),) = value.items()
        if kind == "S":
            size += len(v.encode())
        elif kind == "B":
            size += len(v)
        elif kind == "N":
            size += len(v) // 2 + 1
        elif kind in ("BOOL", "NULL"):
            size += 1
        else:
            size += len(json.dumps(v))
    return size


def kind_of(item: dict[str, Any] | None) -> str:
    """Which item family (adapters/dynamodb) an item belongs to: commit, snapshot, index row, ..."""
    pk, sk = (item or {}).get("pk", {}).get("S", ""), (item or {}).get("sk", {}).get("S", "")
    if pk == "EXEC#orbit-worker-history-probe":  # worker/dedupe.readable: once per worker process
        return "worker dedupe"
    if pk.startswith("EXEC#"):
        return {"C#": "commit", "SN": "snapshot", "A#": "index row"}.get(sk[:2], "history (none yet)")
    if pk.startswith("IDEM#"):
        return "worker dedupe"
    return pk.split("#", 1)[0].lower() or "?"


class Gsi:
    def __init__(self, desc: dict[str, Any], table_keys: list[str]) -> None:
        self.name = desc["IndexName"]
        self.keys = [k["AttributeName"] for k in desc["KeySchema"]]
        proj = desc.get("Projection", {})
        self.all = proj.get("ProjectionType", "ALL") == "ALL"
        self.attrs = set(self.keys) | set(table_keys) | set(proj.get("NonKeyAttributes", []))

    def view(self, item: dict[str, Any] | None) -> dict[str, Any] | None:
        """The row this index holds for `item` (None: the item is not in the index)."""
        if not item or any(k not in item for k in self.keys):
            return None
        return dict(item) if self.all else {k: v for k, v in item.items() if k in self.attrs}

    def writes(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> int:
        before, after = self.view(old), self.view(new)
        if before == after:
            return 0
        units = [max(1, math.ceil(item_size(v) / 1024)) for v in (before, after) if v is not None]
        if before is not None and after is not None and all(before[k] == after[k] for k in self.keys):
            return units[1]  # same key, a projected attribute changed: one update
        return sum(units)  # entered, left, or moved (delete + put)


class Meter:
    """botocore hooks: requests by operation and item kind, capacity units, SQS chunks, AWS CPU time."""

    def __init__(self, raw_dynamodb: Any, table: str) -> None:
        self.raw = raw_dynamodb  # an un-hooked client to read items before/after a write (not counted)
        desc = raw_dynamodb.describe_table(TableName=table)["Table"]
        keys = [k["AttributeName"] for k in desc["KeySchema"]]
        self.gsis = [Gsi(g, keys) for g in desc.get("GlobalSecondaryIndexes", [])]
        self.reset()

    def reset(self) -> None:
        # Costs made while `tag` is set are also added up under it (bench_cost: retention's share).
        self.tag: str | None = None
        self.tagged_wru: Counter[str] = Counter()
        self.tagged_rru: Counter[str] = Counter()
        self.tagged_requests: Counter[str] = Counter()
        self.requests: Counter[str] = Counter()
        self.wru_by: Counter[str] = Counter()
        self.rru_by: Counter[str] = Counter()
        self.sqs_billed = 0
        self.messages_sent = 0
        self.aws_cpu_s = 0.0
        self.calls: Counter[str] = Counter()  # service -> requests (for the Lambda duration model)

    @property
    def wru(self) -> float:
        return float(sum(self.wru_by.values()))

    @property
    def rru(self) -> float:
        return float(sum(self.rru_by.values()))

    def attach(self, client: Any) -> None:
        client.meta.events.register("provide-client-params.*.*", self._params)
        client.meta.events.register("before-call.*.*", self._before)
        client.meta.events.register("after-call.*.*", self._after)

    def detach(self, client: Any) -> None:
        client.meta.events.unregister("provide-client-params.*.*", self._params)
        client.meta.events.unregister("before-call.*.*", self._before)
        client.meta.events.unregister("after-call.*.*", self._after)

    def _params(self, params: dict[str, Any], context: dict[str, Any], model: Any, **_: Any) -> None:
        context["orbit_t0"] = time.thread_time()
        context["orbit_params"] = dict(params)

    def _before(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        params = context.get("orbit_params", {})
        if model.service_model.service_name == "dynamodb" and model.name in (
            "UpdateItem",
            "DeleteItem",
            "PutItem",
        ):
            key = params.get("Key") or {k: params["Item"][k] for k in ("pk", "sk")}
            context["orbit_key"] = key
            context["orbit_old"] = self.raw.get_item(TableName=params["TableName"], Key=key).get("Item")

    def _after(
        self, http_response: Any, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        service, op = model.service_model.service_name, model.name
        params = context.get("orbit_params", {})
        self.calls[service] += 1
        if self.tag is not None:
            self.tagged_requests[self.tag] += 1
            wru, rru = self.wru, self.rru
        if service == "dynamodb":
            self._dynamodb(op, params, parsed, context)
        else:
            self.requests[f"{service}:{op}"] += 1
        if service == "sqs":
            entries = params.get("Entries") or ([params] if "MessageBody" in params else [])
            body = sum(len(e.get("MessageBody", "").encode()) for e in entries)
            self.messages_sent += len(entries)
            self.sqs_billed += max(1, math.ceil(body / 65536))
        if self.tag is not None:
            self.tagged_wru[self.tag] += self.wru - wru
            self.tagged_rru[self.tag] += self.rru - rru
        self.aws_cpu_s += time.thread_time() - context.get("orbit_t0", time.thread_time())

    def _dynamodb(
        self, op: str, params: dict[str, Any], parsed: dict[str, Any], context: dict[str, Any]
    ) -> None:
        factor = 1.0 if params.get("ConsistentRead") else 0.5
        if op in ("Query", "GetItem"):
            items = parsed.get("Items") or ([parsed["Item"]] if parsed.get("Item") else [])
            key = params.get("Key") or {"pk": params.get("ExpressionAttributeValues", {}).get(":pk", {})}
            # (a projected read returns no keys: the request's name the item)
            kind = kind_of({**key, **items[0]} if items else {**key, "sk": {"S": "?"}})
            self.requests[f"dynamodb:{op} {kind}"] += 1
            self.rru_by[kind] += max(1, math.ceil(sum(item_size(i) for i in items) / 4096)) * factor
        elif op == "BatchGetItem":
            self.requests[f"dynamodb:{op}"] += 1
            for items in parsed.get("Responses", {}).values():
                for i in items:
                    self.rru_by[kind_of(i)] += max(1, math.ceil(item_size(i) / 4096)) * factor
        elif op in ("PutItem", "UpdateItem", "DeleteItem"):
            old = context.get("orbit_old")
            failed = "Error" in parsed
            new = (
                old
                if failed
                else self.raw.get_item(TableName=params["TableName"], Key=context["orbit_key"]).get("Item")
            )
            kind = kind_of(params.get("Item") or old or new)
            self.requests[f"dynamodb:{op} {kind}{' (condition failed)' if failed else ''}"] += 1
            size = max(item_size(old), item_size(params.get("Item") if failed else new))
            units = max(1, math.ceil(size / 1024))
            if not failed:
                units += sum(g.writes(old, new) for g in self.gsis)
            self.wru_by[kind] += units
        else:
            self.requests[f"dynamodb:{op}"] += 1
