"""Large JSON values held once in the payload store and referenced from item and message bodies.

A 50 MB step output appears in its StepSucceeded event, in the next step's
StepScheduled input and DispatchTask effect, in the result message, in the
worker's dedupe record and in every later snapshot. Spilling each whole body
would write it once per body. Instead `extract` replaces every large *value* by
a reference to one content-addressed object (the PayloadStore's key is the
SHA-256 of the value's JSON), so the same value in several events, effects,
commits, snapshots and messages is one object, written once.

How a reference is marked, and why it cannot collide with user data: the body
keeps `null` where the value was, and the references travel *beside* the body
as a list of `[path, ref]` pairs (the path from the body's root: keys and list
indexes). Nothing inside user data is interpreted, so no user value can ever be
taken for a reference. This is the convention the stores already had for a
whole-body spill (a `ref` item attribute, a `payload_ref` message field, both
outside the user's JSON); the ref strings are the PayloadStore's own
(`s3://bucket/payloads/<sha256>`).

Which values: anything under a payload field (`VALUE_KEYS`: input, output,
signal payload, error details, ...) whose JSON is above the threshold. Inside
such a value the deepest large parts are referenced: `{"blob": <50 MB>, "n": 1}`
references the string, not the object, so `{"data": <same blob>}` built from it
by an expression is the same object. A container is referenced whole only when
none of its children is large on its own (a 10 MB list of small rows). The
engine's own structure (events lists, units) is never referenced: a body that
is still too large after this is spilled whole by the caller (compressed).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from orbit.errors import NotFound, ValidationError

# Payload fields of events, effects, messages, snapshots (ExecutionState / UnitState) and worker
# dedupe records. Error details sit under "details" inside an error object.
VALUE_KEYS = frozenset({"input", "output", "payload", "details", "items", "data", "heartbeat",
                        "progress", "result"})

# Values whose JSON is above this go to S3 on their own (per value, content-addressed).
# Why 32 KB: inline, a step's output is written ~3 times in its commit (StepSucceeded output,
# StepScheduled input, DispatchTask input) and again in every snapshot, and read back on every
# cold load. On-demand prices: an S3 PUT ($5/M) costs as much as 8 WRU ($0.625/M), a GET ($0.40/M)
# as 3.2 RRU. JSON compresses 4-8x, so a 32 KB value is ~4-8 KB, i.e. 4-8 WRU per inline copy and
# 12-24 WRU for the three copies of one commit: already above the one PUT that replaces them all,
# and the gap grows with every snapshot. Much below this, the extra S3 round trip (~20-50 ms)
# on a cold load would cost more than it saves. It also keeps items far from DynamoDB's 400 KB
# limit: only values under 32 KB stay inline, so a body spills whole only when it holds many.
VALUE_LIMIT = 32 * 1024

Path = list[str | int]


def dumps(value: Any) -> bytes:
    """The one serialisation: a value's digest (its object key) is the SHA-256 of these bytes."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def extract(body: Any, payloads: Any, limit: int) -> tuple[Any, list[list[Any]]]:
    """Body -> (a copy with every large value replaced by null, [[path, ref], ...]).

    The body itself is not modified (callers keep using their objects). Each distinct value is
    put once per call; the PayloadStore skips values it already holds.
    """
    sizes: dict[int, int] = {}
    _size(body, sizes)
    refs: list[list[Any]] = []
    written: dict[bytes, str] = {}

    def store(node: Any, path: Path) -> None:
        data = dumps(node)
        if data not in written:
            written[data] = payloads.put(data)
        refs.append([list(path), written[data]])

    def value(node: Any, path: Path) -> Any:
        if sizes[id(node)] <= limit:
            return node
        children = list(_children(node))
        if not children or all(sizes[id(child)] <= limit for _, child in children):
            store(node, path)
            return None
        return _rebuild(node, ((k, value(child, [*path, k])) for k, child in children))

    def structure(node: Any, path: Path) -> Any:
        if sizes[id(node)] <= limit or not isinstance(node, (dict, list)):
            return node
        return _rebuild(node, ((k, value(child, [*path, k]) if k in VALUE_KEYS and isinstance(node, dict)
                                else structure(child, [*path, k])) for k, child in _children(node)))

    out = structure(body, [])
    return out, refs


def resolve(body: Any, refs: list[list[Any]], payloads: Any, where: str) -> Any:
    """Put every referenced value back into `body` (in place); `where` names the owner in errors."""
    values: dict[str, Any] = {}  # one parse per value, shared by the paths that hold it
    for path, ref in refs:
        if ref not in values:
            try:
                values[ref] = json.loads(payloads.get(ref))
            except NotFound:
                raise NotFound(f"{where}: {describe_ref(ref)}, referenced at {_dotted(path)}, is missing; "
                               "the value cannot be read back (was it deleted from the bucket?)") from None
        if not path:
            return values[ref]
        parent = body
        try:
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = values[ref]
        except (KeyError, IndexError, TypeError):
            raise ValidationError(f"{where}: value reference path {_dotted(path)} does not exist in "
                                  "the body", "payload_ref") from None
    return body


def describe_ref(ref: str) -> str:
    """`object 'payloads/<sha>' in bucket 'b'` for S3 refs, the ref itself for other stores."""
    if isinstance(ref, str) and ref.startswith("s3://") and "/" in ref[5:]:
        bucket, key = ref[5:].split("/", 1)
        return f"payload object {key!r} in bucket {bucket!r}"
    return f"payload {ref!r}"


def _size(node: Any, sizes: dict[int, int]) -> int:
    """Exact length of `dumps(node)`, memoised by object id for every node (the body is alive)."""
    if isinstance(node, dict):  # braces, a colon per entry, commas between entries
        n = 1 + 2 * len(node) + sum(len(dumps(str(k))) + _size(v, sizes) for k, v in node.items())
        n += 0 if node else 1
    elif isinstance(node, list):  # brackets, commas between elements
        n = 1 + len(node) + sum(_size(v, sizes) for v in node)
        n += 0 if node else 1
    else:
        n = len(dumps(node))
    sizes[id(node)] = n
    return n


def _children(node: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(node, dict):
        yield from node.items()
    elif isinstance(node, list):
        yield from enumerate(node)


def _rebuild(node: Any, items: Iterator[tuple[Any, Any]]) -> Any:
    if isinstance(node, dict):
        return dict(items)
    return [v for _, v in items]


def _dotted(path: list[Any]) -> str:
    out = "body"
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else f".{key}"
    return out
