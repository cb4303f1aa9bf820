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

import hashlib
import json
import math
from collections.abc import Iterator
from typing import Any

from orbit.adapters.dynamodb.codec import (
    ConditionFailed,
    decode,
    decode_parts,
    encode,
    expiry_attrs,
    n,
    num,
    owner,
    put_if,
    s,
    text,
    update_if,
)
from orbit.adapters.dynamodb.idempotency import RESULT_TTL_S
from orbit.adapters.dynamodb.index import INDEX, STATUSES, IndexRows, exec_pk
from orbit.adapters.dynamodb.retention import BlobRefs, Recorder, retire
from orbit.adapters.dynamodb.sweep import SweepRows
from orbit.adapters.payload_values import resolve
from orbit.core.history.events import recorded_from_dict
from orbit.core.history.state import ExecutionState
from orbit.errors import ConflictError, NotFound, ValidationError
from orbit.service.ports import Commit, HistoryPage, Loaded, hook_key

SNAP = "SNAP"
FIRST_READ = 10  # commits the first read of a history page asks for (see `history`)
PAGE_ATTRS = ("pk", "sk", "first", "zd", "z", "ref", "raw", "vref")  # a commit's body, for history pages
__all__ = ["INDEX", "STATUSES", "DynamoHistoryStore", "commit_sk", "exec_pk"]


def commit_sk(first_seq: int) -> str:
    return f"C#{first_seq:012d}"


class DynamoHistoryStore(IndexRows, SweepRows):
    def __init__(self, client: Any, table: str, payloads: Any, page_size: int = 64,
                 blobs: BlobRefs | None = None) -> None:
        self._db = client
        self.table = table
        self._payloads = payloads
        self._page = page_size
        self._blobs = blobs  # payload reference tracking (adapters/dynamodb/retention.py)

    def _encode(self, execution_id: str, body: Any, expires_at_s: int | None = None,
                provisional: bool = False) -> dict[str, Any]:
        """Item attributes for `body`; objects it references are registered to the execution first
        (with the item's expiry) and listed in `dig`, which `retire` and the sweeper read."""
        if self._blobs is None:
            return encode(body, self._payloads)
        recorder = Recorder(self._payloads)
        attrs = encode(body, recorder)
        if recorder.puts:
            self._blobs.hold(execution_id, recorder.puts, expires_at_s=expires_at_s, provisional=provisional)
            digests = recorder.digests()
            if digests:
                attrs["dig"] = {"SS": digests}
        return attrs

    # ---------------------------------------------------------------- commits
    def commit(self, execution_id: str, commit: Commit, expires_at_s: int | None = None,
               provisional: bool = False) -> None:
        if not commit.events:
            raise ValidationError("a commit needs at least one event", "commit.events")
        body = {"events": [r.to_dict() for r in commit.events],
                "effects": [e.to_dict() for e in commit.effects], "inbound_ids": list(commit.inbound_ids)}
        item = {"pk": exec_pk(execution_id), "sk": s(commit_sk(commit.first_seq)),
                "first": n(commit.first_seq), "last": n(commit.last_seq), "ts": n(commit.timestamp_ms),
                **self._encode(execution_id, body, expires_at_s, provisional)}
        if commit.inbound_id is not None:
            item["inbound"] = s(commit.inbound_id)
        # the execution ended in this commit (or before), or is young: see service/retention.py
        item.update(expiry_attrs(expires_at_s, provisional))
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

    def committed_after(self, execution_id: str, seq: int) -> bool:
        """One consistent Query, keys only, Limit 1: is there a commit past `seq` (commits are
        contiguous, so the next one would start at seq + 1)?"""
        items = self._db.query(
            TableName=self.table, ConsistentRead=True, Limit=1, ProjectionExpression="sk",
            KeyConditionExpression="pk = :pk AND sk BETWEEN :lo AND :hi",
            ExpressionAttributeValues={":pk": exec_pk(execution_id), ":lo": s(commit_sk(seq + 1)),
                                       ":hi": s("C#~")},
        )["Items"]
        return bool(items)

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
        newest = newest_first[0] if newest_first else snapshot
        expires = num(newest, "expires_at", 0) if newest is not None else 0
        if snapshot is not None:
            state = ExecutionState.from_dict(decode(snapshot, self._payloads))
            seq = num(snapshot, "seq")
        else:
            state, seq = ExecutionState(id=execution_id), 0
        return Loaded(state, seq, [self._commit(i) for i in reversed(newest_first)], expires or None)

    def save_snapshot(self, execution_id: str, state: dict[str, Any], seq: int,
                      expires_at_s: int | None = None, provisional: bool = False) -> None:
        item = {"pk": exec_pk(execution_id), "sk": s(SNAP), "seq": n(seq),
                **self._encode(execution_id, state, expires_at_s, provisional),
                **expiry_attrs(expires_at_s, provisional)}
        try:
            put_if(self._db, self.table, item, "attribute_not_exists(pk) OR seq < :seq",
                   ExpressionAttributeValues={":seq": n(seq)})
        except ConditionFailed:
            pass  # a newer (or equal) snapshot is already stored; an older one must never replace it

    # ---------------------------------------------------------------- history pages
    def history(self, execution_id: str, after_seq: int = 0, limit: int = 1000,
                values: bool = True) -> HistoryPage:
        pk = exec_pk(execution_id)
        # The commit holding seq after_seq+1 is the last one whose first seq is <= after_seq+1.
        start = self._db.query(
            TableName=self.table, ConsistentRead=True, ScanIndexForward=False, Limit=1,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :lo AND :hi",
            ExpressionAttributeValues={":pk": pk, ":lo": s("C#"), ":hi": s(commit_sk(after_seq + 1))},
            ProjectionExpression="sk, #e", ExpressionAttributeNames={"#e": "expires_at"},
        )["Items"]
        if not start:
            if after_seq > 0 and self._exists(execution_id):
                return HistoryPage([], None)
            raise NotFound(f"execution {execution_id!r} does not exist")
        expires = num(start[0], "expires_at", 0) or None
        records: list[Any] = []
        stored: dict[int, list[list[Any]]] = {}
        kw: dict[str, Any] = {
            "TableName": self.table, "ConsistentRead": True,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :lo AND :hi",
            "ExpressionAttributeValues": {":pk": pk, ":lo": start[0]["sk"], ":hi": s("C#~")},
            # a commit holds at least one event, often several: the first read asks for at most
            # FIRST_READ commits (a short page, such as the console's first 25 events, is one small
            # read), the next ones for what the events still wanted need at the density seen so far
            "Limit": max(2, min(limit + 1, self._page, FIRST_READ)),
            # what a page decodes (and pk, sk for error messages): half the bytes of a commit item
            "ProjectionExpression": ", ".join(f"#{i}" for i in range(len(PAGE_ATTRS))),
            "ExpressionAttributeNames": {f"#{i}": a for i, a in enumerate(PAGE_ATTRS)},
        }
        read = 0
        while len(records) <= limit:  # one record past the limit tells whether another page exists
            page = self._db.query(**kw)
            for item in page["Items"]:
                read += 1
                records += self._page_events(item, after_seq, limit + 1 - len(records), values, stored)
                if len(records) > limit:
                    break
            if "LastEvaluatedKey" not in page:
                break
            kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]
            per_commit = max(1.0, len(records) / max(read, 1))
            kw["Limit"] = max(2, min(self._page, math.ceil((limit + 1 - len(records)) / per_commit) + 1))
        if len(records) > limit:
            next_after = records[limit - 1].seq if limit else after_seq
            kept = {q: p for q, p in stored.items() if q <= next_after}
            return HistoryPage(records[:limit], next_after, expires, kept)
        return HistoryPage(records, None, expires, stored)

    def _page_events(self, item: dict[str, Any], after_seq: int, room: int, values: bool,
                     stored: dict[int, list[list[Any]]]) -> list[Any]:
        """The events of one commit item after `after_seq` (at most `room`). Only their own large
        values are read back, and none with `values=False` (their paths go to `stored`): a page
        never reads the values of the events it does not return, nor of the commit's effects."""
        body, refs = decode_parts(item, self._payloads)
        first = num(item, "first")
        wanted = [i for i in range(len(body.get("events") or [])) if first + i > after_seq][:max(room, 0)]
        picked = set(wanted)
        mine = [[path, ref] for path, ref in refs
                if len(path) > 2 and path[0] == "events" and path[1] in picked]
        if values:
            resolve(body, mine, self._payloads, owner(item))
        else:
            for path, _ in mine:
                stored.setdefault(first + path[1], []).append(path[2:])
        events = body["events"]  # only these: the commit's effects are not parsed for a page
        return [recorded_from_dict(events[i]) for i in wanted]

    def _exists(self, execution_id: str) -> bool:
        return bool(self._db.query(
            TableName=self.table, Limit=1, KeyConditionExpression="pk = :pk AND begins_with(sk, :c)",
            ExpressionAttributeValues={":pk": exec_pk(execution_id), ":c": s("C#")},
        )["Items"])

    # ---------------------------------------------------------------- retention
    def retire(self, execution_id: str, ended_at_ms: int, expires_at_s: int, hook_tokens: list[str],
               dedupe_keys: list[str], written: bool = False) -> None:
        retire(self._db, self.table, execution_id, ended_at_ms, expires_at_s, hook_tokens, dedupe_keys,
               self._blobs, RESULT_TTL_S, written)

    # ---------------------------------------------------------------- hooks
    def put_hook(self, token: str, execution_id: str, name: str, expires_at_s: int | None = None,
                 provisional: bool = False) -> None:
        self._db.put_item(TableName=self.table, Item={"pk": s(f"HOOK#{hook_key(token)}"), "sk": s("HOOK"),
                                                      "execution_id": s(execution_id), "name": s(name),
                                                      **expiry_attrs(expires_at_s, provisional)})

    def claim_hook(self, token: str, payload: Any) -> bool:
        """Resume-once, atomically: the first payload to claim the token wins; the same payload again
        (a retried request) still gets True, so a crash between claim and send can be retried."""
        canonical = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        digest = hashlib.sha256(canonical).hexdigest()
        try:
            update_if(self._db, self.table, {"pk": s(f"HOOK#{hook_key(token)}"), "sk": s("HOOK")},
                      "SET resumed_with = :d",
                      "attribute_exists(pk) AND (attribute_not_exists(resumed_with) OR resumed_with = :d)",
                      ExpressionAttributeValues={":d": s(digest)})
        except ConditionFailed:
            return False
        return True

    def claim_request(self, execution_id: str, run: int, ident: str, name: str, digest: str,
                      expires_at_s: int) -> str | None:
        """The first request with this id for this run of the execution claims it (one conditional
        update, at acceptance): None when claimed now or by the same request before (a retry); the
        recorded name when a request of another name or payload holds it (the caller's 409)."""
        try:
            update_if(self._db, self.table, {"pk": s(f"REQ#{execution_id}#{ident}"), "sk": s("REQ")},
                      "SET req_name = :n, req_digest = :d, req_run = :r, expires_at = :e",
                      "attribute_not_exists(pk) OR req_run <> :r OR (req_name = :n AND req_digest = :d)",
                      ExpressionAttributeValues={":n": s(name), ":d": s(digest), ":r": n(run),
                                                 ":e": n(expires_at_s)})
        except ConditionFailed as e:
            return str(((e.old or {}).get("req_name") or {}).get("S", "?"))
        return None

    def find_hook(self, token: str) -> tuple[str, str] | None:
        item = self._db.get_item(TableName=self.table, ConsistentRead=True,
                                 Key={"pk": s(f"HOOK#{hook_key(token)}"), "sk": s("HOOK")}).get("Item")
        return (item["execution_id"]["S"], item["name"]["S"]) if item else None
