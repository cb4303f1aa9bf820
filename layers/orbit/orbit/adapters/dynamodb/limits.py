"""Flow-control state in the Orbit table (docs/decisions/flow-limits-state.md):

    FLOW#C#<scope> / C                 a concurrency counter: holders `hs` (string set), holders
                                       let in from the line whose ticket is kept `gs`, per line
                                       waiting counts `w:<priority>:<tenant>`, the tenants' passes
                                       `p:<priority>:<tenant>` and weights `wt:<tenant>`, the
                                       virtual time `vt`
    FLOW#Q#<scope>#<priority>#<tenant> / <since ms, 15 digits>#<holder>
                                       one waiting item (a line: FIFO by its sort key)
    FLOW#T#<scope>@<holder> / T        the item's ticket: what to send when it is let in
    FLOW#R#<scope> / R                 a token bucket: level `lv` (token-ms) at `at`
    FLOW#H#<holder> / H                the scope a waiting holder waits on (describe finds it)
    FLOW#D#<holder> / D                a dropped start and why (expires after 7 days)

Every change of a counter is one conditional write on its item, so two deciders never let in
more than the limit; a release is conditional on the holder being in `hs`, so a second release
(a crash, a redelivery) changes nothing. Counters and buckets are listed through gsi1 (`FLOW`).
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from orbit.adapters.dynamodb.codec import n, num, s, text
from orbit.adapters.dynamodb.limits_reads import LimitsReads
from orbit.core.flow.gates import Slot
from orbit.core.flow.order import Counter

_FAILED = ("ConditionalCheckFailedException", "TransactionCanceledException")


def _code(e: ClientError) -> str:
    return str(e.response.get("Error", {}).get("Code", ""))


def _reasons(e: ClientError) -> list[str]:
    return [str(r.get("Code", "")) for r in e.response.get("CancellationReasons", []) or []]


class DynamoLimits(LimitsReads):
    def __init__(self, client: Any, table: str) -> None:
        self._db = client
        self.table = table

    # ------------------------------------------------------------ keys
    @staticmethod
    def _counter_key(scope: str) -> dict[str, Any]:
        return {"pk": s(f"FLOW#C#{scope}"), "sk": s("C")}

    @staticmethod
    def _line_pk(scope: str, priority: int, tenant: str) -> str:
        return f"FLOW#Q#{scope}#{priority}#{tenant}"

    @staticmethod
    def _ticket_key(scope: str, holder: str) -> dict[str, Any]:
        return {"pk": s(f"FLOW#T#{scope}@{holder}"), "sk": s("T")}

    @staticmethod
    def _pointer_key(holder: str) -> dict[str, Any]:
        return {"pk": s(f"FLOW#H#{holder}"), "sk": s("H")}

    @staticmethod
    def _counter(item: dict[str, Any] | None, scope: str) -> Counter | None:
        if not item:
            return None
        c = Counter(
            scope,
            text(item, "nm") or "",
            text(item, "ky") or "",
            num(item, "lim"),
            set(item.get("hs", {}).get("SS", [])),
            set(item.get("gs", {}).get("SS", [])),
        )
        c.vt = num(item, "vt")
        for name, value in item.items():
            if name.startswith("w:") and "N" in value:
                _, p, tenant = name.split(":", 2)
                if int(value["N"]) > 0:
                    c.waiting[(int(p), tenant)] = int(value["N"])
            elif name.startswith("p:") and "N" in value:
                p, sep, tenant = name[2:].partition(":")
                if p.isdigit() and sep:  # `p:<tenant>` (one pass per tenant, before 2026-12): unused
                    c.passes[(int(p), tenant)] = int(value["N"])
            elif name.startswith("wt:") and "N" in value:
                c.weights[name[3:]] = int(value["N"])
        return c

    # ------------------------------------------------------- counters
    def acquire(self, slot: Slot, holder: str, now_ms: int) -> bool:
        try:
            self._db.update_item(
                TableName=self.table,
                Key=self._counter_key(slot.scope),
                UpdateExpression="ADD hs :h SET lim = :lim, nm = :nm, ky = :ky, "
                "vt = if_not_exists(vt, :zero), gsi1pk = :g, gsi1sk = :scope",
                ConditionExpression="attribute_not_exists(hs) OR size(hs) < :lim OR contains(hs, :hid)",
                ExpressionAttributeValues={
                    ":h": {"SS": [holder]},
                    ":hid": s(holder),
                    ":lim": n(slot.limit),
                    ":nm": s(slot.name),
                    ":ky": s(slot.key),
                    ":zero": n(0),
                    ":g": s("FLOW"),
                    ":scope": s(slot.scope),
                },
            )
            return True
        except ClientError as e:
            if _code(e) in _FAILED:
                return False
            raise

    def enqueue(self, slot: Slot, holder: str, priority: int, ticket: dict[str, Any], now_ms: int) -> bool:
        entry = f"{now_ms:015d}#{holder}"
        body = json.dumps(
            {
                **ticket,
                "scope": slot.scope,
                "priority": priority,
                "tenant": slot.fairness,
                "since_ms": now_ms,
                "entry": entry,
            },
            separators=(",", ":"),
        )
        names = {
            "#w": f"w:{priority}:{slot.fairness}",
            "#p": f"p:{priority}:{slot.fairness}",
            "#wt": f"wt:{slot.fairness}",
        }
        try:
            self._db.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": self._counter_key(slot.scope),
                            "UpdateExpression": "ADD #w :one SET #p = if_not_exists(#p, vt), #wt = :weight",
                            "ConditionExpression": "size(hs) >= :lim AND NOT contains(hs, :hid)",
                            "ExpressionAttributeNames": names,
                            "ExpressionAttributeValues": {
                                ":one": n(1),
                                ":weight": n(slot.weight),
                                ":lim": n(slot.limit),
                                ":hid": s(holder),
                            },
                        }
                    },
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": {
                                "pk": s(self._line_pk(slot.scope, priority, slot.fairness)),
                                "sk": s(entry),
                                "t": s(body),
                            },
                        }
                    },
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": {**self._ticket_key(slot.scope, holder), "t": s(body)},
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": {**self._pointer_key(holder), "scope": s(slot.scope)},
                        }
                    },
                ]
            )
            return True
        except ClientError as e:
            if _code(e) not in _FAILED:
                raise
            reasons = _reasons(e)
            if len(reasons) > 2 and reasons[2] == "ConditionalCheckFailed":
                return True  # its ticket exists: in line already (a redelivery)
            c = self.read(slot.scope)
            return c is not None and holder in c.holders  # let in since; else: room now, acquire again

    def release(self, slot: Slot, holder: str) -> Counter | None:
        try:
            old = self._db.update_item(
                TableName=self.table,
                Key=self._counter_key(slot.scope),
                UpdateExpression="DELETE hs :h, gs :h",
                ConditionExpression="contains(hs, :hid)",
                ReturnValues="ALL_OLD",
                ExpressionAttributeValues={":h": {"SS": [holder]}, ":hid": s(holder)},
            ).get("Attributes")
        except ClientError as e:
            if _code(e) in _FAILED:
                return None
            raise
        c = self._counter(old, slot.scope)
        if c is None:
            return None
        c.holders.discard(holder)
        if holder in c.granted:  # `granted` stays as it was: it tells a holder let in from a line
            self._db.delete_item(TableName=self.table, Key=self._ticket_key(slot.scope, holder))
        return c

    def read(self, scope: str) -> Counter | None:
        item = self._db.get_item(
            TableName=self.table, Key=self._counter_key(scope), ConsistentRead=True
        ).get("Item")
        return self._counter(item, scope)

    # ----------------------------------------------------------- lines
    def cancel_wait(self, slot: Slot, holder: str) -> bool:
        t = self.ticket(slot.scope, holder)
        if t is None:
            return False
        if t.get("granted_ms") is not None:
            # let in, and released since (the caller found it no holder): a crash between that
            # release and the ticket's delete left it behind
            self._db.delete_item(TableName=self.table, Key=self._ticket_key(slot.scope, holder))
            return False
        names = {"#w": f"w:{t['priority']}:{t['tenant']}"}
        try:
            self._db.transact_write_items(
                TransactItems=[
                    {
                        "Delete": {
                            "TableName": self.table,
                            "Key": self._ticket_key(slot.scope, holder),
                            "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(g)",
                        }
                    },
                    {
                        "Delete": {
                            "TableName": self.table,
                            "Key": {
                                "pk": s(self._line_pk(slot.scope, int(t["priority"]), str(t["tenant"]))),
                                "sk": s(str(t["entry"])),
                            },
                        }
                    },
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": self._counter_key(slot.scope),
                            "UpdateExpression": "ADD #w :minus",
                            "ExpressionAttributeNames": names,
                            "ExpressionAttributeValues": {":minus": n(-1)},
                        }
                    },
                    {"Delete": {"TableName": self.table, "Key": self._pointer_key(holder)}},
                ]
            )
            return True
        except ClientError as e:
            if _code(e) in _FAILED:
                return False  # let in meanwhile: the caller's release finds it a holder next time
            raise

    def head(self, scope: str, priority: int, tenant: str) -> tuple[str, dict[str, Any]] | None:
        items = self._db.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ConsistentRead=True,
            Limit=1,
            ExpressionAttributeValues={":pk": s(self._line_pk(scope, priority, tenant))},
        ).get("Items", [])
        if not items:
            return None
        return str(items[0]["sk"]["S"]), json.loads(items[0]["t"]["S"])

    def grant(
        self,
        slot: Slot,
        entry: str,
        holder: str,
        priority: int,
        tenant: str,
        vt: int,
        tenant_pass: int | None,
        now_ms: int,
    ) -> bool:
        names = {"#w": f"w:{priority}:{tenant}", "#p": f"p:{priority}:{tenant}"}
        update = "ADD hs :h, gs :h, #w :minus SET vt = :vt" + (
            ", #p = :pass" if tenant_pass is not None else ""
        )
        update += "" if tenant_pass is not None else " REMOVE #p"
        values = {
            ":h": {"SS": [holder]},
            ":hid": s(holder),
            ":minus": n(-1),
            ":vt": n(vt),
            ":lim": n(slot.limit),
        }
        if tenant_pass is not None:
            values[":pass"] = n(tenant_pass)
        try:
            self._db.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": self._counter_key(slot.scope),
                            "UpdateExpression": update,
                            "ConditionExpression": "(attribute_not_exists(hs) OR size(hs) < :lim) "
                            "AND NOT contains(hs, :hid)",
                            "ExpressionAttributeNames": names,
                            "ExpressionAttributeValues": values,
                        }
                    },
                    {
                        "Delete": {
                            "TableName": self.table,
                            "Key": {"pk": s(self._line_pk(slot.scope, priority, tenant)), "sk": s(entry)},
                            "ConditionExpression": "attribute_exists(pk)",
                        }
                    },
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": self._ticket_key(slot.scope, holder),
                            "UpdateExpression": "SET g = :now",
                            "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(g)",
                            "ExpressionAttributeValues": {":now": n(now_ms)},
                        }
                    },
                    {"Delete": {"TableName": self.table, "Key": self._pointer_key(holder)}},
                ]
            )
            return True
        except ClientError as e:
            if _code(e) in _FAILED:
                return False
            raise

    def ticket(self, scope: str, holder: str) -> dict[str, Any] | None:
        item = self._db.get_item(
            TableName=self.table, Key=self._ticket_key(scope, holder), ConsistentRead=True
        ).get("Item")
        if not item:
            return None
        t: dict[str, Any] = json.loads(item["t"]["S"])
        if "g" in item:
            t["granted_ms"] = num(item, "g")
        return t
