"""JSON Schema contracts for execution input, output and signal payloads.

Schemas use the dialect they declare in ``$schema``, Draft 2020-12 otherwise.
Validators are cached by the schema's canonical JSON, because the decider
checks the same few schemas over and over.

A schema never reaches the network or the disk: a ``$ref`` (or ``$dynamicRef``,
``$recursiveRef``) must point inside the schema itself (``#/$defs/item``,
``#anchor``); anything else is a validation problem naming where it is. Evaluation
uses an empty registry that retrieves nothing,
so a schema that slipped past validation fails to apply instead of fetching.

Every schema is bounded the same way, whoever evaluates it (the decider, the API, the console,
`orbit test`): its regular expressions run on RE2 (`schema_regex`), never on Python's `re`,
`uniqueItems` is linear (`schema_unique`), and a check evaluates a number of keywords linear in
the size of the value (`schema_budget`).
"""

from __future__ import annotations

import json
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from jsonschema import exceptions as js_exceptions
from jsonschema import validators
from referencing import Registry

from orbit.core.definition.schema_budget import SchemaBudgetExceeded, budgeted, steps_for
from orbit.core.definition.schema_regex import DATA_KEYWORDS, UnsupportedPattern, pattern_problems, re2_class
from orbit.core.history.events import TaskError

# Where the checked value sits, for messages like "input.items: ...".
_ROOT_LABEL = MappingProxyType({
    "INPUT_CONTRACT_VIOLATION": "input",
    "OUTPUT_CONTRACT_VIOLATION": "output",
})
_MAX_DETAILS = 20
_NOTHING_TO_RETRIEVE: Registry = Registry()  # no resources, no retrieve function: never a fetch


def validate_schema(schema: Any) -> list[str]:
    """Problems with ``schema`` itself (empty when it is a valid JSON Schema)."""
    if not isinstance(schema, (dict, bool)):
        return [f"a schema must be a mapping or a boolean, not {type(schema).__name__}"]
    try:
        key = _key(schema)
    except (TypeError, ValueError, RecursionError) as exc:
        return [f"not a JSON document: {exc}"]
    outside = reference_problems(schema)
    return outside or list(_schema_problems(key))


_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


def reference_problems(schema: Any) -> list[str]:
    """`path.$ref: ...` for every reference that leaves the schema (a URL, a file, another document)."""
    out: list[str] = []
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, list):
            stack.extend((item, f"{path}[{i}]") for i, item in enumerate(node))
        elif isinstance(node, dict):
            for key, value in node.items():
                where = f"{path}.{key}" if path else str(key)
                if key in _REF_KEYWORDS and isinstance(value, str) and not value.startswith("#"):
                    out.append(f"{where}: {value!r} points outside this schema; only local references "
                               "such as '#/$defs/NAME' are allowed (schemas never fetch URLs or files)")
                elif key not in DATA_KEYWORDS:
                    stack.append((value, where))
    return sorted(out)


@lru_cache(maxsize=512)
def _schema_problems(key: str) -> tuple[str, ...]:
    # Cached: checking against the meta-schema costs about a millisecond, and the
    # same schemas are validated every time a definition is loaded.
    schema = json.loads(key)
    try:
        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        meta = cls(cls.META_SCHEMA)  # the meta-schemas' own refs: all bundled with jsonschema
        problems = [_schema_problem(err) for err in meta.iter_errors(schema)]
    except Exception as exc:  # noqa: BLE001 - unknown $schema URIs, unhashable oddities: report, never raise
        return (f"{type(exc).__name__}: {exc}",)
    return tuple(sorted(problems))


def check_schema(schema: Any, value: Any, code: str, label: str | None = None,
                 schema_path: str = "") -> TaskError | None:
    """``None`` when ``value`` satisfies ``schema``; otherwise a non-retryable
    :class:`TaskError` with ``code`` whose message names the first failing path
    and whose ``details.errors`` lists every failure (up to 20). ``schema_path`` (`input`,
    `signals.approve.schema`) names the schema in the message of one that cannot be applied."""
    if schema is None or schema is True or schema == {}:
        return None
    root = label or _ROOT_LABEL.get(code, "value")
    try:
        validator = compile_schema(schema)
    except Exception as exc:  # noqa: BLE001 - a schema that slipped past validation (or stored before a rule)
        return _unusable(code, root, unusable_reason(exc, schema_path))
    return check_compiled(validator, value, code, root)


def compile_schema(schema: Any) -> Any:
    """The validator for ``schema`` (shared through a cache keyed by its canonical JSON), or None
    for a schema every value satisfies. Callers that check the same schema often keep the
    validator (`task_contracts.TaskContracts`) and call :func:`check_compiled`.

    Every schema's `pattern`, `patternProperties` and `additionalProperties` match on RE2 (time
    linear in the input, `schema_regex`) instead of Python's backtracking `re`, so a pattern such
    as ``^(a+)+$`` cannot hold the decider or the API. A schema with a pattern RE2 does not
    support (backreferences, lookaround), or with `unevaluatedProperties` and `patternProperties`
    together, raises :class:`UnsupportedPattern` naming where it is."""
    if schema is None or schema is True or schema == {}:
        return None
    return _validator(_key(schema))


def unusable_reason(exc: Exception, schema_path: str = "") -> str:
    """Why a schema cannot be applied, one line: `input.properties.s.pattern: regular expression ...`."""
    if isinstance(exc, UnsupportedPattern):
        return exc.at(schema_path)
    return f"{type(exc).__name__}: {exc}"


def check_compiled(validator: Any, value: Any, code: str, root: str) -> TaskError | None:
    """:func:`check_schema` with a validator from :func:`compile_schema`; ``root`` names the value
    in messages (``output`` gives ``output.items[0].sku: ...``)."""
    if validator is None:
        return None
    try:
        errors = list(budgeted(validator, steps_for(value)).iter_errors(value))
    except SchemaBudgetExceeded as exc:
        return TaskError(code, f"{root}: {exc}", retryable=False, details={"errors": []})
    except Exception as exc:  # noqa: BLE001 - an unresolvable $ref, a schema that cannot be applied
        return _unusable(code, root, unusable_reason(exc))
    if not errors:
        return None
    errors.sort(key=lambda e: (list(map(str, e.absolute_path)), e.message))
    listed = [{"path": _value_path(root, err), "message": _message(err), "keyword": str(err.validator)}
              for err in errors[:_MAX_DETAILS]]
    first = js_exceptions.best_match(errors)
    message = f"{_value_path(root, first)}: {_message(first)}"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more)"
    return TaskError(code, message, retryable=False, details={"errors": listed, "count": len(errors)})


def _unusable(code: str, root: str, why: str) -> TaskError:
    return TaskError(code, f"{root}: the schema cannot be applied: {why}",
                     retryable=False, details={"errors": []})


def _key(schema: Any) -> str:
    # No `default=`: a non-JSON value must not silently become a different schema.
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


@lru_cache(maxsize=512)
def _validator(key: str) -> Any:
    schema = json.loads(key)
    problems = pattern_problems(schema)
    if problems:
        raise UnsupportedPattern(problems)
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    # Local references resolve inside `schema`; anything else is Unresolvable, never retrieved.
    return re2_class(cls)(schema, registry=_NOTHING_TO_RETRIEVE)


def _message(err: js_exceptions.ValidationError) -> str:
    """jsonschema's message with the offending value written as JSON, as the user wrote it.

    Its messages start with the value's Python repr ("None is not of type 'object'").
    """
    shown, message = repr(err.instance), str(err.message)
    if not message.startswith(shown):
        return message
    try:
        as_json = json.dumps(err.instance, ensure_ascii=False)
    except (TypeError, ValueError):
        return message
    if len(as_json) > 80:
        as_json = as_json[:77] + "..."
    return as_json + message[len(shown):]


def _value_path(root: str, err: js_exceptions.ValidationError) -> str:
    path = root
    parts: list[Any] = list(err.absolute_path)
    if err.validator == "required" and isinstance(err.instance, dict):
        # Point at the missing property itself: "input.items", not "input".
        missing = [name for name in (err.validator_value or []) if isinstance(name, str)
                   and name not in err.instance and repr(name) in err.message]
        if missing:
            parts.append(missing[0])
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _schema_problem(err: js_exceptions.ValidationError) -> str:
    where = ".".join(str(p) for p in err.absolute_path)
    return f"{where}: {err.message}" if where else err.message
