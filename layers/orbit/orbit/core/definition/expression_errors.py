"""Plain messages for the Python exceptions jsonata-python lets escape.

JSONata reports most failures as `JException` with a code (D1001, T1006...), but some
operations are plain Python underneath (`float('abc')` in `$number`, `math.fmod` for `%`,
`1/0`), and their exceptions reach us raw. A workflow author should read "division by zero",
not "ZeroDivisionError: float division by zero", and learn which JSONata function failed.
"""

from __future__ import annotations

import re
from types import TracebackType

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
