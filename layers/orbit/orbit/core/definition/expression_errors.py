"""Plain messages for the Python exceptions jsonata-python lets escape.

JSONata reports most failures as `JException` with a code (D1001, T1006...), but some
operations are plain Python underneath (`float('abc')` in `$number`, `math.fmod` for `%`,
`1/0`), and their exceptions reach us raw. A workflow author should read "division by zero",
not "ZeroDivisionError: float division by zero", and learn which JSONata function failed.
"""

from __future__ import annotations

import json
import re
from types import TracebackType
from typing import Any

_NOT_A_FLOAT = re.compile(r"could not convert string to float: (.*)", re.DOTALL)


def plain_message(exc: BaseException) -> str:
    """What went wrong, in words, prefixed by the JSONata function (``$number: ...``) when
    the failure happened inside one."""
    function, frame = _jsonata_frames(exc.__traceback__)
    text = _describe(exc, frame)
    return f"${function}: {text}" if function else text


def _describe(exc: BaseException, frame: str | None) -> str:
    message = str(exc)
    if isinstance(exc, ZeroDivisionError):
        if "negative power" in message:
            return "0 cannot be raised to a negative power"
        return "modulo by zero" if "modulo" in message else "division by zero"
    if isinstance(exc, OverflowError):
        return "number out of range"
    if isinstance(exc, ValueError):
        found = _NOT_A_FLOAT.fullmatch(message)
        if found:
            return f"cannot convert {found.group(1)} to a number"
        if message == "math domain error":
            # `%` is math.fmod in jsonata-python, which raises this for a zero divisor
            return "modulo by zero" if frame == "evaluate_numeric_expression" else "invalid number"
    return message or "evaluation failed"


def _jsonata_frames(tb: TracebackType | None) -> tuple[str | None, str | None]:
    """(innermost jsonata built-in function, innermost jsonata frame) of a traceback."""
    function: str | None = None
    frame: str | None = None
    while tb is not None:
        code = tb.tb_frame.f_code
        parts = re.split(r"[\\/]", code.co_filename)
        if "jsonata" in parts[:-1]:
            frame = code.co_name
            if parts[-1] == "jsonata.py":
                function = None  # back in the evaluator (e.g. a lambda $map calls): not the built-in's fault
            elif parts[-1] == "functions.py" and not code.co_name.startswith(("_", "func_")):
                function = _camel(code.co_name)  # built-ins are snake_case methods: format_number
        tb = tb.tb_next
    return function, frame


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


# Habits from Python, JavaScript and Step Functions that JSONata spells differently.
_HABITS = ((re.compile(r"==|!=="), "use = for equality (JSONata has no ==)"),
           (re.compile(r"&&"), "use `and` (JSONata has no &&)"),
           (re.compile(r"\|\|"), "use `or` (JSONata has no ||)"),
           (re.compile(r"\$\.|\$\$\."), "JSONata paths start at the root's names (`input.x`), not `$.`"))
_STRINGS = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'")


def habit_hint(text: str) -> str:
    """`; <hint>` for a parse error in `text` that a habit from another language explains, else ""."""
    code = _STRINGS.sub('""', text)
    for pattern, hint in _HABITS:
        if pattern.search(code):
            return f"; {hint}"
    return ""


_PATH = re.compile(r"(?<![\w$.])([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*|\[\d+\])+)")
_SEGMENT = re.compile(r"\.([A-Za-z_]\w*)|\[(\d+)\]")
_MISSING = object()


def named_values(text: str, root: Any, location: int | None = None, code: str | None = None) -> str:
    """` (input.amount is "x", a string)`: the values of the paths the expression reads from the
    root, for a runtime error. With JSONata's position of a failing operator (T2001: its left
    side, T2002: its right side), only the path next to it; else up to three."""
    if not isinstance(root, dict):
        return ""
    code_text = _STRINGS.sub(lambda m: " " * len(m.group()), text)
    found = [(m.start(), m.end(), m.group()) for m in _PATH.finditer(code_text) if m.group(1) in root]
    if not found:
        return ""
    if isinstance(location, int) and code in ("T2001", "T2002"):
        if code == "T2001":
            left = [f for f in found if f[1] <= location]
            found = left[-1:] or found
        else:
            right = [f for f in found if f[0] >= location - 1]
            found = right[:1] or found
    parts = []
    for _, _, path in list(dict.fromkeys(found))[:3]:
        value = _resolve(root, path)
        parts.append(f"{path} is missing" if value is _MISSING else f"{path} is {_show(value)}")
    return f" ({'; '.join(parts)})"


def _resolve(root: dict[str, Any], path: str) -> Any:
    head = re.match(r"[A-Za-z_]\w*", path)
    value: Any = root.get(head.group(), _MISSING) if head else _MISSING
    for m in _SEGMENT.finditer(path, head.end() if head else 0):
        if isinstance(value, dict) and m.group(1) is not None:
            value = value.get(m.group(1), _MISSING)
        elif isinstance(value, list) and m.group(2) is not None and int(m.group(2)) < len(value):
            value = value[int(m.group(2))]
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _show(value: Any) -> str:
    kind = {str: "a string", bool: "a boolean", int: "a number", float: "a number", list: "a list",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    text = text if len(text) <= 40 else text[:40] + "..."
    return text if value is None else f"{text}, {kind}"
