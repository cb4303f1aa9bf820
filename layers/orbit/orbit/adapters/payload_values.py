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


def dumps(value: Any) -> bytes:
    """The one serialisation: a value's digest (its object key) is the SHA-256 of these bytes."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def extract(body: Any, payloads: Any, limit: int) -> tuple[Any, list[list[Any]]]:
    """Body -> (the body with every large value replaced by null, [[path, ref], ...]).

    The caller's objects are never modified: a container is copied only where something inside
    it was replaced. Each distinct value is put once per call; the PayloadStore skips values it
    already holds. Only payload fields are serialised (each once per level it is descended
    into), so a snapshot of 10,000 small units costs a walk, not a serialisation per node.
    """
    refs: list[list[Any]] = []
    written: dict[bytes, str] = {}
    serialised: dict[int, tuple[Any, bytes]] = {}  # id -> (node, its JSON): one dumps per object

    def json_of(node: Any) -> bytes:
        if id(node) not in serialised:
            serialised[id(node)] = (node, dumps(node))  # holding the node keeps its id unique
        return serialised[id(node)][1]

    def store(data: bytes, path: tuple[Any, ...]) -> None:
        if data not in written:
            written[data] = payloads.put(data)
        refs.append([list(path), written[data]])

    def value(node: Any, path: tuple[Any, ...]) -> Any:
        if json_bound(node, limit) <= limit:  # most values: decided without serialising
            return node
        if isinstance(node, (dict, list)):
            large = [(k, child) for k, child in _children(node)
                     if json_bound(child, limit) > limit and len(json_of(child)) > limit]
            if large:  # descend: reference the large parts, keep the small ones inline
                return _replace(node, {k: value(child, (*path, k)) for k, child in large})
        data = json_of(node)
        if len(data) <= limit:
            return node
        store(data, path)
        return None

    def structure(node: Any, path: tuple[Any, ...]) -> Any:
        changed: dict[Any, Any] = {}
        for k, child in _children(node):
            if isinstance(node, dict) and k in VALUE_KEYS:
                new = value(child, (*path, k))
            elif isinstance(child, (dict, list)):
                new = structure(child, (*path, k))
            else:
                continue
            if new is not child:
                changed[k] = new
        return _replace(node, changed)

    try:
        if json_bound(body, limit) <= limit:  # most bodies are ~1 KB: no walk at all
            return body, []
        out = structure(body, ())
    except RecursionError:
        # JSON nested deeper than this walk can follow (json.dumps goes deeper): keep the body as
        # it is; the caller compresses it or spills it whole, nothing is lost.
        return body, []
    return out, refs


def resolve(body: Any, refs: list[list[Any]], payloads: Any, where: str) -> Any:
    """Put every referenced value back into `body` (in place); `where` names the owner in errors."""
    data: dict[str, bytes] = {}  # one read per value, however many paths hold it
    scalars: dict[str, Any] = {}  # and one parse when it is immutable (a string: the usual leaf)
    for path, ref in refs:
        if ref not in data:
            try:
                data[ref] = payloads.get(ref)
            except NotFound:
                raise NotFound(f"{where}: {describe_ref(ref)}, referenced at {_dotted(path)}, is missing; "
                               "the value cannot be read back (was it deleted from the bucket?)") from None
        if ref in scalars:
            found = scalars[ref]
        else:
            # Containers are parsed per path: two events must not share one mutable list.
            found = json.loads(data[ref])
            if not isinstance(found, (dict, list)):
                scalars[ref] = found
        if not path:
            return found
        parent = body
        try:
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = found
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


def json_bound(node: Any, limit: int) -> int:
    """An upper bound of len(dumps(node)), exact enough to decide `<= limit` without serialising;
    stops counting once past `limit` (a string's char is 1-6 bytes of JSON)."""
    if isinstance(node, str):
        return 6 * len(node) + 2
    if isinstance(node, dict):
        total = 2
        for k, v in node.items():
            total += 6 * len(str(k)) + 4 + json_bound(v, limit)
            if total > limit:
                break
        return total
    if isinstance(node, list):
        total = 2
        for v in node:
            total += 1 + json_bound(v, limit)
            if total > limit:
                break
        return total
    if isinstance(node, int) and not isinstance(node, bool):
        return len(str(node))
    return 24  # a float's repr, true, false, null


def _children(node: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(node, dict):
        yield from node.items()
    elif isinstance(node, list):
        yield from enumerate(node)


def _replace(node: Any, changed: dict[Any, Any]) -> Any:
    """`node` itself when nothing changed, else a shallow copy with the changed children."""
    if not changed:
        return node
    if isinstance(node, dict):
        return {**node, **changed}  # same keys, same order
    copy = list(node)
    for index, new in changed.items():
        copy[index] = new
    return copy


def _dotted(path: list[Any]) -> str:
    out = "body"
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else f".{key}"
    return out
