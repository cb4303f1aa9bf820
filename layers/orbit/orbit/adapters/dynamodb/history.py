"""HistoryStore on one DynamoDB table.

Items of one execution share the partition `EXEC#<id>` (sort keys order them):

    A#INDEX        execution index row (GSI gsi1 by workflow, gsi2 by status)
    C#<first seq>  one commit: the decision's events + effects + inbound id
    SNAP           snapshot: ExecutionState.to_dict() as of `seq`

Why one item per commit: a decision appends several events; one conditional
PutItem (`attribute_not_exists`) on the commit's first seq makes the append
atomic and is the single synchronisation point, at one write unit for a
typical compressed commit. A transaction writing one item per event would cost
2x per item and cap at 100 items.

Why the load is bounded: `load` is a single descending Query over
`C#..SNAP` that returns the snapshot first and then commits newest first,
stopping at the first commit the snapshot already covers. The service saves
a snapshot every few commits, so a load reads (snapshot + a few commits)
however long the history has grown. Reads are strongly consistent: a stale read
would only cost a ConflictError and a reload, but the next message of an
execution usually arrives right after its commit.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any

from orbit.adapters.dynamodb.codec import ConditionFailed, decode, encode, n, num, put_if, s, text, update_if
from orbit.core.history.state import ExecutionState
from orbit.errors import ConflictError, NotFound, ValidationError
from orbit.service.ports import Commit, HistoryPage, IndexEntry, Loaded

SNAP = "SNAP"
INDEX = "A#INDEX"
STATUSES = ("RUNNING", "COMPENSATING", "COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT")


def exec_pk(execution_id: str) -> dict[str, str]:
    return s(f"EXEC#{execution_id}")


def commit_sk(first_seq: int) -> str:
    return f"C#{first_seq:012d}"


class DynamoHistoryStore:
    def __init__(self, client: Any, table: str, payloads: Any, page_size: int = 64) -> None:
        self._db = client
        self.table = table
        self._payloads = payloads
        self._page = page_size

    # ---------------------------------------------------------------- commits
    def commit(self, execution_id: str, commit: Commit) -> None:
        if not commit.events:
            raise ValidationError("a commit needs at least one event", "commit.events")
        body = {"events": [r.to_dict() for r in commit.events],
                "effects": [e.to_dict() for e in commit.effects], "inbound_ids": list(commit.inbound_ids)}
        item = {"pk": exec_pk(execution_id), "sk": s(commit_sk(commit.first_seq)),
                "first": n(commit.first_seq), "last": n(commit.last_seq), "ts": n(commit.timestamp_ms),
                **encode(body, self._payloads)}
        if commit.inbound_id is not None:
            item["inbound"] = s(commit.inbound_id)
        try:
            put_if(self._db, self.table, item, "attribute_not_exists(pk)")
        except ConditionFailed as e:
            holder = text(e.old or {}, "inbound", "?")
            raise ConflictError(execution_id, commit.first_seq,
                                f"execution {execution_id!r}: seq {commit.first_seq} already committed "
                                f"(by inbound {holder!r})") from None

    def read_commit(self, execution_id: str, first_seq: int) -> Commit | None:
        item = self._db.get_item(TableName=self.table, ConsistentRead=True,
                                 Key={"pk": exec_pk(execution_id), "sk": s(commit_sk(first_seq))}).get("Item")
        return self._commit(item) if item else None

    def scan_commits(self, execution_id: str, newest_first: bool = True) -> Iterator[Commit]:
        """Small pages (a redelivery is usually found among the newest few commits)."""
        kw: dict[str, Any] = {
            "TableName": self.table, "ConsistentRead": True, "ScanIndexForward": not newest_first,
            "Limit": 8, "KeyConditionExpression": "pk = :pk AND begins_with(sk, :c)",
            "ExpressionAttributeValues": {":pk": exec_pk(execution_id), ":c": s("C#")},
        }
        while True:
            page = self._db.query(**kw)
            for item in page["Items"]:
                yield self._commit(item)
            if "LastEvaluatedKey" not in page:
                return
            kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _commit(self, item: dict[str, Any]) -> Commit:
        body = decode(item, self._payloads)
        return Commit.from_dict({"first_seq": num(item, "first"), "timestamp_ms": num(item, "ts"),
                                 "inbound_id": text(item, "inbound"), **body})

    # ---------------------------------------------------------------- load
    def load(self, execution_id: str) -> Loaded:
        snapshot: dict[str, Any] | None = None
        newest_first: list[dict[str, Any]] = []
        kw: dict[str, Any] = {
            "TableName": self.table, "ConsistentRead": True, "ScanIndexForward": False, "Limit": self._page,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :lo AND :hi",
            "ExpressionAttributeValues": {":pk": exec_pk(execution_id), ":lo": s("C#"), ":hi": s(SNAP)},
        }
        done = False
        while not done:
            page = self._db.query(**kw)
            for item in page["Items"]:
                if item["sk"]["S"] == SNAP:
                    snapshot = item
                elif snapshot is not None and num(item, "last") <= num(snapshot, "seq"):
                    done = True  # the snapshot covers this commit and every older one
                    break
                else:
                    newest_first.append(item)
            if "LastEvaluatedKey" not in page:
                break
            kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        if snapshot is None and not newest_first:
            raise NotFound(f"execution {execution_id!r} does not exist")
        if snapshot is not None:
            state = ExecutionState.from_dict(decode(snapshot, self._payloads))
            seq = num(snapshot, "seq")
        else:
            state, seq = ExecutionState(id=execution_id), 0
        return Loaded(state, seq, [self._commit(i) for i in reversed(newest_first)])

    def save_snapshot(self, execution_id: str, state: dict[str, Any], seq: int) -> None:
        item = {"pk": exec_pk(execution_id), "sk": s(SNAP), "seq": n(seq), **encode(state, self._payloads)}
        try:
            put_if(self._db, self.table, item, "attribute_not_exists(pk) OR seq < :seq",
                   ExpressionAttributeValues={":seq": n(seq)})
        except ConditionFailed:
            pass  # a newer (or equal) snapshot is already stored; an older one must never replace it

    # ---------------------------------------------------------------- history pages
    def history(self, execution_id: str, after_seq: int = 0, limit: int = 1000) -> HistoryPage:
        pk = exec_pk(execution_id)
        # The commit holding seq after_seq+1 is the last one whose first seq is <= after_seq+1.
        start = self._db.query(
            TableName=self.table, ConsistentRead=True, ScanIndexForward=False, Limit=1,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :lo AND :hi",
            ExpressionAttributeValues={":pk": pk, ":lo": s("C#"), ":hi": s(commit_sk(after_seq + 1))},
        )["Items"]
        if not start:
            if after_seq > 0 and self._exists(execution_id):
                return HistoryPage([], None)
            raise NotFound(f"execution {execution_id!r} does not exist")
        records: list[Any] = []
        kw: dict[str, Any] = {
            "TableName": self.table, "ConsistentRead": True,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :lo AND :hi",
            "ExpressionAttributeValues": {":pk": pk, ":lo": start[0]["sk"], ":hi": s("C#~")},
        }
        while len(records) <= limit:  # one record past the limit tells whether another page exists
            page = self._db.query(**kw)
            for item in page["Items"]:
                records += [r for r in self._commit(item).events if r.seq > after_seq]
                if len(records) > limit:
                    break
            if "LastEvaluatedKey" not in page:
                break
            kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        if len(records) > limit:
            return HistoryPage(records[:limit], records[limit - 1].seq if limit else after_seq)
        return HistoryPage(records, None)

    def _exists(self, execution_id: str) -> bool:
        return bool(self._db.query(
            TableName=self.table, Limit=1, KeyConditionExpression="pk = :pk AND begins_with(sk, :c)",
            ExpressionAttributeValues={":pk": exec_pk(execution_id), ":c": s("C#")},
        )["Items"])

    # ---------------------------------------------------------------- index
    def put_index(self, entry: IndexEntry) -> None:
        """Write the execution's index row (the service calls it only when the status changes).

        Cost, why it is shaped this way: a row write is 1 WRU plus one per GSI it touches, and a GSI
        key change is a delete + a put (2). gsi1 (by workflow) projects only `fixed`, the part that
        never changes, so a status change does not touch it; gsi2 (by status) changes key anyway.
        Start 3 WRU + each status change 3 WRU (with gsi1 projecting ALL it was 4).
        """
        order = f"{entry.created_at_ms:015d}#{entry.execution_id}"
        fixed = {"execution_id": entry.execution_id, "workflow": entry.workflow, "version": entry.version,
                 "created_at_ms": entry.created_at_ms, "parent_id": entry.parent_id}
        item = {"pk": exec_pk(entry.execution_id), "sk": s(INDEX),
                "gsi1pk": s(f"WF#{entry.workflow}"), "gsi1sk": s(order),
                "gsi2pk": s(f"ST#{entry.status}"), "gsi2sk": s(order),
                "status": s(entry.status), "updated": n(entry.updated_at_ms),
                "fixed": s(json.dumps(fixed, separators=(",", ":")))}
        # Updates may arrive out of order (two deciders, redeliveries): the newest one wins.
        try:
            put_if(self._db, self.table, item, "attribute_not_exists(pk) OR updated <= :u",
                   ExpressionAttributeValues={":u": n(entry.updated_at_ms)})
        except ConditionFailed:
            pass

    def list_executions(self, workflow: str | None = None, status: str | None = None, limit: int = 50,
                        cursor: str | None = None) -> tuple[list[IndexEntry], str | None]:
        """Newest first. The cursor is the index sort key (created#id) of the last entry returned.

        By status (with or without a workflow): gsi2, whose rows carry everything. By workflow alone:
        gsi1 gives the ids in order, then one BatchGetItem reads their current status.
        """
        before = _decode_cursor(cursor)
        if status is not None:
            parts = [("gsi2", "gsi2pk", f"ST#{status}", "gsi2sk")]
        elif workflow is not None:
            parts = [("gsi1", "gsi1pk", f"WF#{workflow}", "gsi1sk")]
        else:  # no filter: merge the status partitions (no single hot "all" partition)
            parts = [("gsi2", "gsi2pk", f"ST#{st}", "gsi2sk") for st in STATUSES]
        found: list[tuple[str, dict[str, Any]]] = []
        for index, pk_name, pk_value, sk_name in parts:
            found += self._query_index(index, pk_name, pk_value, sk_name, before, limit + 1,
                                       workflow if status is not None else None)
        found.sort(key=lambda pair: pair[0], reverse=True)
        page = found[:limit]
        more = len(found) > limit
        if status is None and workflow is not None:
            page = self._with_status(page)
        return [_entry(i) for _, i in page], (_encode_cursor(page[-1][0]) if more and page else None)

    def _query_index(self, index: str, pk_name: str, pk_value: str, sk_name: str, before: str | None,
                     want: int, workflow: str | None) -> list[tuple[str, dict[str, Any]]]:
        cond = f"{pk_name} = :pk" + (f" AND {sk_name} < :before" if before else "")
        values: dict[str, Any] = {":pk": s(pk_value)}
        if before:
            values[":before"] = s(before)
        kw: dict[str, Any] = {"TableName": self.table, "IndexName": index, "ScanIndexForward": False,
                              "KeyConditionExpression": cond, "ExpressionAttributeValues": values,
                              "Limit": max(want, 10)}
        if workflow is not None:
            kw["FilterExpression"] = "gsi1pk = :wf"
            values[":wf"] = s(f"WF#{workflow}")
        out: list[tuple[str, dict[str, Any]]] = []
        while len(out) < want:
            page = self._db.query(**kw)
            out += [(i[sk_name]["S"], i) for i in page["Items"]]
            if "LastEvaluatedKey" not in page:
                break
            kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return out[:want]

    def _with_status(self, page: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
        """gsi1 rows hold only `fixed`: read the rows themselves (BatchGetItem, 100 keys a call)."""
        rows: dict[str, dict[str, Any]] = {}
        keys = [{"pk": i["pk"], "sk": i["sk"]} for _, i in page]
        for start in range(0, len(keys), 100):
            pending: dict[str, Any] = {self.table: {"Keys": keys[start:start + 100]}}
            for _ in range(8):  # unprocessed keys (throttling) are retried, then reported
                got = self._db.batch_get_item(RequestItems=pending)
                for row in got.get("Responses", {}).get(self.table, []):
                    rows[row["pk"]["S"]] = row
                pending = got.get("UnprocessedKeys") or {}
                if not pending:
                    break
            if pending:
                raise RuntimeError(f"table {self.table}: index rows still unprocessed after 8 tries")
        return [(order, rows[i["pk"]["S"]]) for order, i in page if i["pk"]["S"] in rows]

    # ---------------------------------------------------------------- hooks
    def put_hook(self, token: str, execution_id: str, name: str) -> None:
        self._db.put_item(TableName=self.table, Item={
            "pk": s(f"HOOK#{token}"), "sk": s("HOOK"), "execution_id": s(execution_id), "name": s(name)})

    def claim_hook(self, token: str, payload: Any) -> bool:
        """Resume-once, atomically: the first payload to claim the token wins; the same payload again
        (a retried request) still gets True, so a crash between claim and send can be retried."""
        canonical = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        digest = hashlib.sha256(canonical).hexdigest()
        try:
            update_if(self._db, self.table, {"pk": s(f"HOOK#{token}"), "sk": s("HOOK")},
                      "SET resumed_with = :d",
                      "attribute_exists(pk) AND (attribute_not_exists(resumed_with) OR resumed_with = :d)",
                      ExpressionAttributeValues={":d": s(digest)})
        except ConditionFailed:
            return False
        return True

    def find_hook(self, token: str) -> tuple[str, str] | None:
        item = self._db.get_item(TableName=self.table, ConsistentRead=True,
                                 Key={"pk": s(f"HOOK#{token}"), "sk": s("HOOK")}).get("Item")
        return (item["execution_id"]["S"], item["name"]["S"]) if item else None


def _entry(row: dict[str, Any]) -> IndexEntry:
    fixed = json.loads(row["fixed"]["S"])
    return IndexEntry(fixed["execution_id"], fixed["workflow"], fixed["version"], row["status"]["S"],
                      fixed["created_at_ms"], num(row, "updated"), fixed.get("parent_id"))


def _encode_cursor(sort_key: str) -> str:
    return base64.urlsafe_b64encode(sort_key.encode()).decode()


def _decode_cursor(cursor: str | None) -> str | None:
    if not cursor:
        return None
    try:
        return base64.urlsafe_b64decode(cursor.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        raise ValidationError(f"not a list cursor: {cursor!r}", "cursor") from None
