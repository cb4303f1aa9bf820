"""EventBridge event patterns: what `PutRule` would refuse, refused at registration by its path.

The rules (EventBridge user guide, "Comparison operators for use in event patterns"): a pattern is
a non-empty JSON object; each field's value is a nested pattern (an object) or a non-empty array
of matchers; a matcher is a string, number, boolean or null (equality) or an object with exactly
one operator: `prefix` / `suffix` (a string, or `{"equals-ignore-case": string}`),
`equals-ignore-case`, `wildcard`, `cidr` (strings), `exists` (a boolean), `numeric` (one or two
`operator, number` pairs; `=` alone), `anything-but` (a scalar, a non-empty array of scalars, or
one of `prefix` / `suffix` / `equals-ignore-case` / `wildcard`). `$or` takes a list of two or more
patterns. PutRule takes at most 4096 characters of pattern text.

Pure: no I/O. `matches` is the subset EventBridge and moto agree on, used by tests and the
`orbit dev` explanation of why an event was ignored.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

MAX_PATTERN_CHARS = 4096
LEAF_OPERATORS = (
    "prefix",
    "suffix",
    "equals-ignore-case",
    "wildcard",
    "cidr",
    "exists",
    "numeric",
    "anything-but",
)
NUMERIC_OPS = ("<", "<=", "=", ">=", ">")


def pattern_problems(pattern: Any, path: str) -> list[tuple[str, str]]:
    """(path, why) for each reason EventBridge would refuse `pattern`; empty when it would accept it."""
    out: list[tuple[str, str]] = []
    if not isinstance(pattern, dict) or not pattern:
        return [(path, "an event pattern must be a non-empty mapping of event fields to matchers")]
    try:
        text = json.dumps(pattern, separators=(",", ":"))
    except (TypeError, ValueError):
        return [(path, "an event pattern must be JSON data")]
    if len(text) > MAX_PATTERN_CHARS:
        out.append(
            (path, f"{len(text)} characters of pattern; EventBridge takes at most {MAX_PATTERN_CHARS}")
        )
    _node(pattern, path, out)
    return out


def _node(node: dict[str, Any], path: str, out: list[tuple[str, str]]) -> None:
    for key, value in node.items():
        where = f"{path}.{key}"
        if key == "$or":
            if not isinstance(value, list) or len(value) < 2:
                out.append((where, "$or takes a list of two or more patterns"))
                continue
            for i, sub in enumerate(value):
                if not isinstance(sub, dict) or not sub:
                    out.append((f"{where}[{i}]", "each $or branch must be a non-empty pattern (a mapping)"))
                else:
                    _node(sub, f"{where}[{i}]", out)
        elif isinstance(value, dict):
            if not value:
                out.append(
                    (where, "an empty mapping matches nothing; name a field or use a list of matchers")
                )
            else:
                _node(value, where, out)
        elif isinstance(value, list):
            if not value:
                out.append((where, "empty arrays are not allowed: list at least one matcher"))
            for i, matcher in enumerate(value):
                _matcher(matcher, f"{where}[{i}]", out)
        else:
            out.append(
                (
                    where,
                    f"must be a mapping or a list of matchers, not {json.dumps(value)}: "
                    f"write [{json.dumps(value)}] to match that value",
                )
            )


def _matcher(m: Any, where: str, out: list[tuple[str, str]]) -> None:
    if m is None or isinstance(m, (str, bool, int, float)):
        return
    if isinstance(m, list):
        out.append((where, "a matcher cannot be a list; list the values side by side instead"))
        return
    if not isinstance(m, dict) or len(m) != 1:
        out.append((where, f"a matcher object takes exactly one operator ({', '.join(LEAF_OPERATORS)})"))
        return
    op, arg = next(iter(m.items()))
    at = f"{where}.{op}"
    if op in ("prefix", "suffix"):
        if isinstance(arg, dict) and set(arg) == {"equals-ignore-case"}:
            arg = arg["equals-ignore-case"]
        if not isinstance(arg, str):
            out.append((at, f'{op} takes a string (or {{"equals-ignore-case": string}})'))
    elif op in ("equals-ignore-case", "wildcard"):
        if not isinstance(arg, str):
            out.append((at, f"{op} takes a string"))
        elif op == "wildcard" and "**" in arg:
            out.append((at, "consecutive wildcard characters are not allowed"))
    elif op == "cidr":
        try:
            ipaddress.ip_network(arg if isinstance(arg, str) else "", strict=False)
        except ValueError:
            out.append((at, "cidr takes a CIDR block like 10.0.0.0/24"))
    elif op == "exists":
        if not isinstance(arg, bool):
            out.append((at, "exists takes true or false"))
    elif op == "numeric":
        _numeric(arg, at, out)
    elif op == "anything-but":
        _anything_but(arg, at, out)
    else:
        out.append((at, f"unknown operator {op!r}; EventBridge knows {', '.join(LEAF_OPERATORS)}"))


def _numeric(arg: Any, at: str, out: list[tuple[str, str]]) -> None:
    ok = isinstance(arg, list) and len(arg) in (2, 4)
    pairs = list(zip(arg[::2], arg[1::2], strict=False)) if ok else []
    for op, num in pairs:
        if op not in NUMERIC_OPS or isinstance(num, bool) or not isinstance(num, (int, float)):
            ok = False
    if ok and len(pairs) == 2 and (pairs[0][0] in ("<", "<=", "=") or pairs[1][0] in (">", ">=", "=")):
        ok = False  # a range is a lower bound then an upper bound
    if not ok:
        out.append(
            (
                at,
                "numeric takes [op, number] or [lower op, number, upper op, number] with ops "
                + " ".join(NUMERIC_OPS),
            )
        )


def _anything_but(arg: Any, at: str, out: list[tuple[str, str]]) -> None:
    if arg is None or isinstance(arg, (str, bool, int, float)):
        return
    if isinstance(arg, list):
        if not arg or not all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in arg):
            out.append((at, "anything-but takes a non-empty list of strings or numbers"))
        return
    if isinstance(arg, dict) and len(arg) == 1:
        op, value = next(iter(arg.items()))
        if op in ("prefix", "suffix", "equals-ignore-case", "wildcard") and (
            isinstance(value, str)
            or (
                op == "equals-ignore-case"
                and isinstance(value, list)
                and value
                and all(isinstance(v, str) for v in value)
            )
        ):
            return
    out.append(
        (
            at,
            "anything-but takes a value, a list of values, or one of prefix, suffix, "
            "equals-ignore-case, wildcard",
        )
    )


_MISSING = object()


def matches(pattern: dict[str, Any], event: Any) -> bool:
    """Whether `event` matches `pattern` (a valid one): equality, prefix, suffix, exists, numeric,
    anything-but, equals-ignore-case, wildcard and $or (not cidr)."""
    for key, want in pattern.items():
        if key == "$or":
            if not any(matches(p, event) for p in want):
                return False
            continue
        got = event.get(key, _MISSING) if isinstance(event, dict) else _MISSING
        if isinstance(want, dict):
            if not matches(want, got if isinstance(got, dict) else {}):
                return False
        elif not any(_leaf(m, got) for m in want):
            return False
    return True


def _leaf(m: Any, got: Any) -> bool:
    values = got if isinstance(got, list) else [got]
    if not isinstance(m, dict):
        return got is not _MISSING and m in values
    op, arg = next(iter(m.items()))
    if op == "exists":
        return bool((got is not _MISSING) == arg)
    if got is _MISSING:
        return False
    return any(_one(op, arg, v) for v in values)


def _one(op: str, arg: Any, v: Any) -> bool:
    if op in ("prefix", "suffix"):
        fold = isinstance(arg, dict)
        text = arg["equals-ignore-case"] if fold else arg
        if not isinstance(v, str):
            return False
        a, b = (v.lower(), text.lower()) if fold else (v, text)
        return a.startswith(b) if op == "prefix" else a.endswith(b)
    if op == "equals-ignore-case":
        return isinstance(v, str) and v.lower() == arg.lower()
    if op == "wildcard":
        return isinstance(v, str) and _wildcard(arg, v)
    if op == "numeric":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return False
        checks = {"<": v.__lt__, "<=": v.__le__, "=": v.__eq__, ">=": v.__ge__, ">": v.__gt__}
        return all(checks[o](n) for o, n in zip(arg[::2], arg[1::2], strict=False))
    if op == "anything-but":
        if isinstance(arg, list):
            return v not in arg
        if isinstance(arg, dict):
            sub, value = next(iter(arg.items()))
            return not _one(sub, value, v)
        return bool(v != arg)
    return False


def _wildcard(pattern: str, value: str) -> bool:
    """EventBridge's wildcard: `*` is any run of characters, `\\*` a literal star."""
    parts: list[str] = [""]
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            parts[-1] += pattern[i + 1]
            i += 2
            continue
        if ch == "*":
            parts.append("")
        else:
            parts[-1] += ch
        i += 1
    if len(parts) == 1:
        return value == parts[0]
    if not value.startswith(parts[0]) or not value.endswith(parts[-1]):
        return False
    at, end = len(parts[0]), len(value) - len(parts[-1])
    for middle in parts[1:-1]:
        found = value.find(middle, at, end)
        if found < 0:
            return False
        at = found + len(middle)
    return at <= end
