"""Small reusable checks that append :class:`Problem` s instead of raising.

Every check tolerates any input type: validation must report, never crash.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from types import MappingProxyType
from typing import Any

from orbit.core.definition import expressions
from orbit.core.definition.contracts import validate_schema
from orbit.core.definition.durations import DurationError, parse_duration
from orbit.core.definition.expression_names import unknown_functions
from orbit.errors import ExpressionError, Problem


class Problems:
    """An ordered collector of problems. `stored`: the document was registered before (see
    validate_definition), so checks added since then, which would strand its executions, are off."""

    def __init__(self, stored: bool = False) -> None:
        self.items: list[Problem] = []
        self.stored = stored

    def add(self, path: str, message: str) -> None:
        self.items.append(Problem(path, message))


def join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def type_name(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)


def suggest(word: str, known: Iterable[str]) -> str:
    match = difflib.get_close_matches(word, [k for k in known if isinstance(k, str)], n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


# Keys from Step Functions (and other engines) that Orbit spells differently: the hint replaces
# "did you mean".
HABITS = MappingProxyType({
    ("a step", "next"): "; use `after` on the next step (a step names the steps it waits for)",
    ("a step", "end"): "; a step with no other step `after` it is where the workflow ends",
    ("a step", "type"): "; a step's kind is its key: task, compute, sleep, wait_for, workflow, for...",
    ("a step", "resource"): "; use `task: NAME` (the worker's @task name)",
    ("a step", "parameters"): "; use `input:`",
    ("a step", "result_path"): "; a step's output is `steps.NAME.output`",
})


def check_keys(obj: dict[Any, Any], allowed: Iterable[str], path: str, out: Problems, what: str) -> None:
    allowed = list(allowed)
    for key in obj:
        if not isinstance(key, str):
            out.add(path, f"key {key!r} is not a string")
        elif key not in allowed:
            hint = HABITS.get((what, key)) or suggest(key, allowed)
            out.add(join(path, key), f"unknown key in {what}{hint}")


MAX_VALUES = 100_000
MAX_DEPTH = 100
MAX_CHARS = 1_000_000  # characters in all keys and strings (a text definition: its length)
MAX_STEPS = 20_000


def check_size(document: Any, out: Problems) -> bool:
    """Refuse documents too big or deep to check safely (YAML aliases can expand a small
    file into billions of values; deep nesting would exhaust the stack). Iterative."""
    steps = document.get("steps") if isinstance(document, dict) else None
    if isinstance(steps, dict) and len(steps) > MAX_STEPS:  # first: it costs nothing to see
        out.add("steps", f"{len(steps)} steps, more than {MAX_STEPS}")
        return False
    count = chars = 0
    stack: list[tuple[Any, int]] = [(document, 0)]
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            out.add("", f"the document is too large: more than {MAX_VALUES} values "
                        "(YAML anchors and aliases count once per use)")
            return False
        if depth > MAX_DEPTH:
            out.add("", f"the document is nested more than {MAX_DEPTH} levels deep")
            return False
        if isinstance(value, dict):
            chars += sum(len(key) for key in value if isinstance(key, str))
            stack.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, str):
            chars += len(value)
        if chars > MAX_CHARS:
            out.add("", f"the document is too large: more than {MAX_CHARS} characters in its keys "
                        "and strings")
            return False
    return True


def check_json(value: Any, path: str, out: Problems, depth: int = 0) -> None:
    """Report values JSON cannot carry (YAML dates, NaN, non-string keys...)."""
    if depth > 200:
        out.add(path, "nested too deeply (more than 200 levels)")
        return
    if value is None or isinstance(value, (bool, int, str)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            out.add(path, f"{value} is not a JSON number")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                out.add(path, f"key {key!r} is not a string (quote it)")
            else:
                check_json(item, join(path, key), out, depth + 1)
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            check_json(item, f"{path}[{index}]", out, depth + 1)
        return
    hint = " (quote it: YAML reads unquoted dates and times as timestamps)" \
        if type(value).__name__ in ("date", "datetime", "time") else ""
    out.add(path, f"{type(value).__name__} is not a JSON value{hint}")


def check_duration(value: Any, path: str, out: Problems, positive: bool = True) -> int | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        out.add(path, f"{value!r} has no unit: write a duration like 30s, 5m or 500ms")
        return None
    try:
        ms = parse_duration(value)
    except DurationError as exc:
        out.add(path, str(exc))
        return None
    if positive and ms <= 0:
        out.add(path, "must be longer than 0")
        return None
    return ms


def check_int(value: Any, path: str, out: Problems, minimum: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        out.add(path, f"must be a whole number, not {type_name(value)}")
        return None
    if value < minimum:
        out.add(path, f"must be >= {minimum}")
        return None
    return value


def check_name(value: Any, path: str, out: Problems, what: str) -> bool:
    if not isinstance(value, str) or not value.strip():
        out.add(path, f"must be a non-empty string ({what}), not {type_name(value)}")
        return False
    return True


def check_expression_string(value: Any, path: str, out: Problems, what: str) -> bool:
    """``value`` must be a single ``{% expr %}`` string that parses."""
    if not expressions.is_expression(value):
        out.add(path, f"must be an expression \"{{% ... %}}\" giving {what}, not {_show(value)}")
        return False
    return check_template(value, path, out)


def check_template(template: Any, path: str, out: Problems) -> bool:
    """Every expression leaf parses; strings that look like interpolation are refused."""
    ok = True
    for leaf_path, text in _leaves(template, path):
        if text is None:
            out.add(leaf_path, "a string is an expression only when it is entirely \"{% ... %}\"; "
                               "to build text use & inside one: \"{% 'id-' & input.id %}\"")
            ok = False
            continue
        try:
            expressions.parse_expression(text)
        except ExpressionError as exc:
            out.add(leaf_path, f"expression does not parse: {exc}")
            ok = False
            continue
        for name in () if out.stored else unknown_functions(text):
            out.add(leaf_path, f"unknown function ${name} in {text.strip()[:80]!r}; JSONata's functions are "
                               "listed at https://docs.jsonata.org (e.g. $string, $sum, $now)")
            ok = False
    return ok


def _leaves(template: Any, path: str) -> Iterable[tuple[str, str | None]]:
    """(path, expression text) for expressions, (path, None) for half-expressions."""
    if isinstance(template, str):
        if expressions.is_expression(template):
            yield path, expressions.expression_text(template)
        elif "{%" in template and "%}" in template:
            yield path, None
    elif isinstance(template, dict):
        for key, item in template.items():
            yield from _leaves(item, join(path, key))
    elif isinstance(template, list):
        for index, item in enumerate(template):
            yield from _leaves(item, f"{path}[{index}]")


def check_schema_doc(schema: Any, path: str, out: Problems) -> None:
    if not isinstance(schema, (dict, bool)):
        out.add(path, f"must be a JSON Schema (a mapping), not {type_name(schema)}")
        return
    for message in validate_schema(schema):
        out.add(path, f"invalid JSON Schema: {message}")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
