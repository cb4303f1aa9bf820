"""The regular expressions of every JSON Schema Orbit evaluates run on RE2.

jsonschema's own `pattern`, `patternProperties` and `additionalProperties` call Python's `re`,
which backtracks: `^(a+)+$` against 50,000 `a`s and a `!` would hold the process for ever. The
validator class :func:`re2_class` gives a jsonschema dialect those three keywords with the search
on RE2 (`expression_budget.linear_regex`: time linear in the input, patterns of at most
1,000 characters), so a definition's `input`, `output_schema`, signal schemas and task
contracts, and a code workflow's schemas, cannot make a check run unbounded. The same class
checks `uniqueItems` in time linear in the array (`schema_unique`; jsonschema's is quadratic)
and counts every keyword it evaluates against a per-check budget (`schema_budget`).

:func:`pattern_problems` lists, by their path in the schema, the patterns RE2 cannot run
(backreferences, lookaround, too long) and `unevaluatedProperties` used with
`patternProperties` (jsonschema would match those with `re`): a definition is refused with them
when it is registered, and a schema holding one cannot be applied (contracts.compile_schema).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from jsonschema import exceptions as js_exceptions
from jsonschema import validators

from orbit.core.definition.schema_budget import counted
from orbit.core.definition.schema_unique import enum, unique_items
from orbit.errors import ExpressionError

DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})  # values, not subschemas
# Keywords whose value maps names (not keywords) to subschemas.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_UNEVALUATED = "unevaluatedProperties"


class UnsupportedPattern(ValueError):
    """A schema whose regular expressions cannot run on RE2; `problems` are `PATH: why`."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{p}: {why}" if p else why for p, why in problems))

    def at(self, base: str) -> str:
        """The first problem with its path under `base` (`input`, `signals.approve.schema`)."""
        path, why = self.problems[0]
        return f"{_join(base, path)}: {why}"


def pattern_problems(schema: Any) -> list[tuple[str, str]]:
    """(path in `schema`, why) for every regular expression RE2 cannot run, in path order."""
    out: list[tuple[str, str]] = []
    uses: dict[str, str] = {}
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, list):
            stack.extend((item, f"{path}[{i}]") for i, item in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("pattern"), str):
            _compile_into(node["pattern"], _join(path, "pattern"), out)
        if isinstance(node.get("patternProperties"), dict):
            uses.setdefault("patternProperties", _join(path, "patternProperties"))
            for regex in node["patternProperties"]:
                _compile_into(str(regex), _join(path, "patternProperties"), out)
        if _UNEVALUATED in node:
            uses.setdefault(_UNEVALUATED, _join(path, _UNEVALUATED))
        for key, value in node.items():
            where = _join(path, str(key))
            if key in DATA_KEYWORDS:
                continue
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                stack.extend((sub, _join(where, str(name))) for name, sub in value.items())
            else:
                stack.append((value, where))
    if len(uses) == 2:
        out.append((uses[_UNEVALUATED], "`unevaluatedProperties` with `patternProperties` is not supported "
                                        "(their patterns could not run on RE2); use `additionalProperties`"))
    return sorted(out)


def _compile_into(pattern: str, path: str, out: list[tuple[str, str]]) -> None:
    try:
        _regex(pattern)
    except ExpressionError as exc:
        out.append((path, str(exc)))


def _join(base: str, key: str) -> str:
    return f"{base}.{key}" if base else key


@lru_cache(maxsize=16)
def re2_class(cls: Any) -> Any:
    """jsonschema's validator class `cls` with its regex keywords searching on RE2,
    `uniqueItems` and `enum` linear in the value (`schema_unique`), and every keyword spending a
    step of the check's budget (`schema_budget`)."""
    own = {"pattern": _pattern, "patternProperties": _pattern_properties,
           "additionalProperties": _additional_properties, "uniqueItems": unique_items, "enum": enum}
    keywords = {k: counted(own.get(k, v)) for k, v in cls.VALIDATORS.items()}
    return validators.extend(cls, keywords)


def _search(pattern: str, text: str) -> bool:
    return _regex(pattern).search(text) is not None


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> Any:
    from orbit.core.definition.expression_budget import linear_regex

    return linear_regex(pattern)


# jsonschema's own `pattern`, `patternProperties` and `additionalProperties`, with the regex search
# on RE2 (jsonschema/_keywords.py calls re.search).
def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield js_exceptions.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra_schema: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    known = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = sorted((k for k in instance if k not in known and not any(_search(p, k) for p in patterns)),
                    key=str)
    if validator.is_type(extra_schema, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], extra_schema, path=extra)
    elif not extra_schema and extras:
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            listed = ", ".join(repr(p) for p in sorted(patterns))
            yield js_exceptions.ValidationError(
                f"{', '.join(repr(e) for e in extras)} {verb} not match any of the regexes: {listed}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            listed = ", ".join(repr(e) for e in extras)
            message = f"Additional properties are not allowed ({listed} {verb} unexpected)"
            yield js_exceptions.ValidationError(message)
