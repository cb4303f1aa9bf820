"""What a replayed durable call must match: the values that decide what the call does.

At a position where history recorded a unit, the code's call must agree with
it on the kind and name (task, workflow or signal) and on every value that
would make the call behave differently: a step's input, retry policy,
timeouts, flow-control key and priority; a sleep's wake time; a child's workflow and input. Labels, queues and
`on_exhausted` are not compared (they do not change what ran). A difference is
reported with both values; an input is shown by its hash and a short preview,
with the execution's hook tokens redacted (they are capabilities).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from orbit.core.history.state import UnitState, parse_key
from orbit.core.runtime import commands as C
from orbit.core.runtime.code.specs import optional_ms, retry_policy

PREVIEW_CHARS = 200
REDACTED = "<hook token>"


DEFAULT_RETRY = C.RetryPolicy().to_dict()


def describe_call(kind: str, unit: str, **names: Any) -> dict[str, Any]:
    """A durable call as divergences show it: kind, unit key, and its task/signal/workflow name."""
    return {"kind": kind, "unit": unit, **{k: v for k, v in names.items() if v is not None}}


def recorded_call(key: str, u: UnitState) -> dict[str, Any]:
    """The call history recorded as unit `key`."""
    kind = u.kind or ("map" if parse_key(key)[2] is not None else "unit")
    return describe_call(kind, key, task=u.task or None, signal=u.signal)


def step_values(spec: Any, input: Any, u: UnitState | None = None) -> dict[str, Any] | None:
    """The compared values of a step call, without building its command (replay runs this for
    every recorded step; the input is normalised to JSON only if it differs as given). None when
    `u` is given and plainly the same call (defaults everywhere, the same input): the common case,
    checked without building anything."""
    if u is not None and spec.retry is None and spec.timeout is None and spec.queue_timeout is None \
            and spec.heartbeat_timeout is None and u.timeout_ms is None and u.queue_timeout_ms is None \
            and u.heartbeat_timeout_ms is None and (u.retry is None or u.retry == DEFAULT_RETRY) \
            and spec.key is None and spec.priority is None and u.flow_key is None and u.priority is None \
            and (u.input is input or u.input == input):
        return None
    return {"task": spec.task, "input": input,
            "retry": DEFAULT_RETRY if spec.retry is None else retry_policy(spec.retry).to_dict(),
            "timeout_ms": optional_ms(spec.timeout, f"step {spec.task!r} timeout"),
            "queue_timeout_ms": optional_ms(spec.queue_timeout, f"step {spec.task!r} queue_timeout"),
            "heartbeat_timeout_ms": optional_ms(spec.heartbeat_timeout,
                                                f"step {spec.task!r} heartbeat_timeout"),
            "key": spec.key, "priority": spec.priority}


def requested_values(cmd: C.Command | None) -> dict[str, Any]:
    """The compared values of the command a call would issue."""
    if isinstance(cmd, C.ScheduleStep):
        s = cmd.step
        return {"task": s.task, "input": s.input, "retry": C.RetryPolicy.of(s.retry).to_dict(),
                "timeout_ms": s.timeout_ms, "queue_timeout_ms": s.queue_timeout_ms,
                "heartbeat_timeout_ms": s.heartbeat_timeout_ms, "key": s.flow_key, "priority": s.priority}
    if isinstance(cmd, C.WaitUntil):
        return {"fire_at_ms": cmd.fire_at_ms}
    if isinstance(cmd, C.WaitForSignal):
        return {"signal": cmd.name}
    if isinstance(cmd, C.LinkChild):
        return {"workflow": cmd.workflow, "input": cmd.input}
    return {}


def recorded_values(u: UnitState) -> dict[str, Any]:
    """The same values as history recorded them (only what the unit's events carry)."""
    if u.kind in ("task", "http"):
        return {"task": u.task, "input": u.input, "retry": u.retry,
                "timeout_ms": u.timeout_ms, "queue_timeout_ms": u.queue_timeout_ms,
                "heartbeat_timeout_ms": u.heartbeat_timeout_ms, "key": u.flow_key, "priority": u.priority}
    if u.kind == "sleep":
        return {"fire_at_ms": u.fire_at_ms} if u.fire_at_ms is not None else {}
    if u.kind == "wait_for":
        return {"signal": u.signal}
    if u.kind == "workflow":
        return {"workflow": u.task, "input": u.input}
    return {}


def differences(recorded: dict[str, Any], requested: dict[str, Any]) -> list[str]:
    """Names of the compared values that differ (a value history did not record is not compared)."""
    out = []
    for key, want in requested.items():
        have = recorded.get(key)
        if key not in recorded or (key == "retry" and have is None) or have == want:
            continue
        if key == "input" and have == _json(want):
            continue  # the same JSON (a tuple given where history holds a list)
        if key == "retry" and C.RetryPolicy.of(have).to_dict() == C.RetryPolicy.of(want).to_dict():
            continue  # the same policy, recorded by an older version in another shape
        out.append(key)
    return out


def _json(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return value


def value_differences(u: UnitState, command: C.Command | dict[str, Any],
                      hooks: dict[str, Any]) -> dict[str, Any] | None:
    """`{field: {recorded, requested}}` for the compared values of `command` (or the values
    themselves) that differ from what `u` recorded, as details show them; None when all match."""
    have = recorded_values(u)
    want = command if isinstance(command, dict) else requested_values(command)
    fields = differences(have, want)
    if not fields:
        return None
    tokens = hook_tokens(hooks)
    return {f: {"recorded": shown(f, have[f], tokens), "requested": shown(f, want[f], tokens)}
            for f in fields}


def items_differences(recorded: Any, items: list[Any], hooks: dict[str, Any]) -> dict[str, Any] | None:
    """The same for a map's items (recorded by its StepFanOut)."""
    if not isinstance(recorded, list) or recorded == items:
        return None
    tokens = hook_tokens(hooks)
    return {"items": {"recorded": shown("input", recorded, tokens),
                      "requested": shown("input", items, tokens)}}


def hook_tokens(hooks: dict[str, Any]) -> list[str]:
    return [str(h.get("token") or "") for h in hooks.values()]


def shown(key: str, value: Any, tokens: list[str]) -> Any:
    """A difference as details show it: inputs by hash and a redacted preview, others as they are."""
    if key != "input":
        return value
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    preview = redact(text, tokens)
    if len(preview) > PREVIEW_CHARS:
        preview = preview[:PREVIEW_CHARS] + "..."
    return {"sha256": digest, "preview": preview}


def redact(text: str, tokens: list[str]) -> str:
    for t in tokens:
        if t:
            text = text.replace(t, REDACTED)
    return text


def summary(fields: list[str], recorded: dict[str, Any], requested: dict[str, Any]) -> str:
    """`input (sha256 1a2b.. -> 3c4d..), timeout_ms (30000 -> 60000)` for the message."""
    parts = []
    for f in fields:
        a, b = recorded[f], requested[f]
        if isinstance(a, dict) and "sha256" in a and isinstance(b, dict):
            parts.append(f"{f} (sha256 {a['sha256']} -> {b['sha256']})")
        else:
            parts.append(f"{f} ({json.dumps(a, default=str)} -> {json.dumps(b, default=str)})")
    return ", ".join(parts)
