"""Item bodies and the one conditional-write helper shared by the DynamoDB adapters.

Bodies (a commit's events + effects, a snapshot) are JSON compressed with zlib
and stored as a binary attribute `zd` (small bodies, with the preset dictionary
of zdict.py) or `z` (plain zlib): on-demand writes are billed per started
KB, and event JSON compresses 4-8x, so a typical commit stays at one write unit.
Large values inside a body (inputs, outputs, signal payloads, error details)
are first moved to the PayloadStore one by one, content-addressed, and the item
carries `vref` (their count) with the body stored as `[body, [[path, ref]...]]`
(adapters/payload_values.py): a value repeated across events, effects, commits
and snapshots is one S3 object. A compressed body still above `SPILL_LIMIT`
(many medium values) goes to the PayloadStore whole and the item keeps `ref`
instead: DynamoDB refuses items over 400 KB, and nothing may be silently
truncated.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from botocore.exceptions import ClientError

from orbit.adapters.dynamodb.zdict import DICT_V1
from orbit.adapters.payload_values import VALUE_LIMIT, describe_ref, dumps, extract, resolve
from orbit.errors import NotFound

SPILL_LIMIT = 300_000
FAST_ABOVE = 1_000_000
DICT_BELOW = 64_000  # past this the dictionary's 3 KB window no longer matters


class ConditionFailed(Exception):
    """Internal: the condition of a write did not hold; `old` is the item as it was (ALL_OLD)."""

    def __init__(self, old: dict[str, Any] | None) -> None:
        self.old = old
        super().__init__("conditional check failed")


def put_if(client: Any, table: str, item: dict[str, Any], condition: str, **kw: Any) -> None:
    """PutItem with a condition; a failed condition raises ConditionFailed carrying the old item.

    `ReturnValuesOnConditionCheckFailure=ALL_OLD` returns what blocked us in the same round trip
    (the pattern powertools' idempotency persistence layer uses), so no extra read is needed.
    """
    try:
        client.put_item(TableName=table, Item=item, ConditionExpression=condition,
                        ReturnValuesOnConditionCheckFailure="ALL_OLD", **kw)
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise
        raise ConditionFailed(e.response.get("Item")) from None


def update_if(client: Any, table: str, key: dict[str, Any], update: str, condition: str, **kw: Any) -> None:
    try:
        client.update_item(TableName=table, Key=key, UpdateExpression=update, ConditionExpression=condition,
                           ReturnValuesOnConditionCheckFailure="ALL_OLD", **kw)
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise
        raise ConditionFailed(e.response.get("Item")) from None


def encode(value: Any, payloads: Any, spill_limit: int = SPILL_LIMIT,
           value_limit: int = VALUE_LIMIT) -> dict[str, Any]:
    """JSON value -> item attributes: {"zd"|"z": B} or, when too large, {"ref": S} (+ "vref": N)."""
    value, refs = extract(value, payloads, value_limit)
    # Serialised once, after extraction: a commit holding a 50 MB output three times is never
    # turned into 150 MB of JSON.
    attrs = _pack(dumps([value, refs] if refs else value), payloads, spill_limit)
    if refs:
        attrs["vref"] = {"N": str(len(refs))}
    return attrs


def _pack(raw: bytes, payloads: Any, spill_limit: int) -> dict[str, Any]:
    if len(raw) >= FAST_ABOVE and _incompressible(raw):
        # Already dense (encoded or random data): compressing 50 MB would cost seconds for nothing.
        return {"ref": {"S": payloads.put(raw)}, "raw": {"BOOL": True}}
    if len(raw) <= DICT_BELOW:
        # Small bodies (most commits): the preset dictionary holds their keys, so a ~1 KB commit
        # compresses to well under half of what plain zlib gives (fewer read units per load,
        # and more decisions stay inside one write unit).
        packer = zlib.compressobj(9, zdict=DICT_V1)
        return {"zd": {"B": packer.compress(raw) + packer.flush()}}
    # Level 6 keeps small items small (billed per KB); past a megabyte the body goes to S3 anyway
    # and level 1 is ~5x faster.
    data = zlib.compress(raw, 6 if len(raw) < FAST_ABOVE else 1)
    if len(data) > spill_limit:
        return {"ref": {"S": payloads.put(data)}}
    return {"z": {"B": data}}


def _incompressible(raw: bytes, sample: int = 65_536) -> bool:
    return len(zlib.compress(raw[:sample], 1)) > 0.6 * min(sample, len(raw))


def decode(item: dict[str, Any], payloads: Any) -> Any:
    """Item attributes -> the JSON value, with every referenced value read back.

    A missing S3 object raises NotFound naming the item's execution (or owner), key and bucket.
    """
    body, refs = decode_parts(item, payloads)
    return resolve(body, refs, payloads, owner(item)) if refs else body


def decode_parts(item: dict[str, Any], payloads: Any) -> tuple[Any, list[list[Any]]]:
    """Item attributes -> (the JSON value with null where a large value is referenced, the
    [[path, ref], ...] of those values), reading no referenced value: for readers that resolve
    only some of them (`resolve`), such as a page of history that shows large values on demand."""
    if "zd" in item:
        unpacker = zlib.decompressobj(zdict=DICT_V1)
        doc = json.loads(unpacker.decompress(item["zd"]["B"]) + unpacker.flush())
    else:
        if "ref" in item:
            try:
                data = payloads.get(item["ref"]["S"])
            except NotFound:
                raise NotFound(f"{owner(item)}: its body, {describe_ref(item['ref']['S'])}, is missing; "
                               "the item cannot be read back (was it deleted from the bucket?)") from None
        else:
            data = item["z"]["B"]
        doc = json.loads(data if item.get("raw", {}).get("BOOL") else zlib.decompress(data))
    if "vref" not in item:
        return doc, []
    body, refs = doc
    return body, refs


def owner(item: dict[str, Any]) -> str:
    """Who an item belongs to, for error messages: `execution 'x' (item C#000000000004)`."""
    pk, sk = text(item, "pk", "") or "", text(item, "sk", "") or ""
    if pk.startswith("EXEC#"):
        return f"execution {pk[5:]!r} (item {sk})"
    return f"item {pk} / {sk}" if pk else "item"


def s(value: str) -> dict[str, str]:
    return {"S": value}


def n(value: int) -> dict[str, str]:
    return {"N": str(int(value))}


def num(item: dict[str, Any], name: str, default: int = 0) -> int:
    return int(item[name]["N"]) if name in item else default


def text(item: dict[str, Any], name: str, default: str | None = None) -> str | None:
    return item[name]["S"] if name in item else default


# Marks an item written with a young execution's provisional expiry (service/retention.py): the
# sweeper pins what still has it once the execution is no longer young; `retire` drops it.
PROVISIONAL = "prov"


def expiry_attrs(expires_at_s: int | None, provisional: bool = False) -> dict[str, Any]:
    """The attributes an item of an execution is written with: its expiry, and the provisional mark."""
    if expires_at_s is None:
        return {}
    return {"expires_at": n(expires_at_s), **({PROVISIONAL: {"BOOL": True}} if provisional else {})}
