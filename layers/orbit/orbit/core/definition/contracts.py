"""JSON Schema contracts for execution input, output and signal payloads.

Schemas use the dialect they declare in ``$schema``, Draft 2020-12 otherwise.
Validators are cached by the schema's canonical JSON, because the decider
checks the same few schemas over and over.

A schema never reaches the network or the disk: a ``$ref`` (or ``$dynamicRef``,
``$recursiveRef``) must point inside the schema itself (``#/$defs/item``,
``#anchor``); anything else is a validation problem naming where it is. Evaluation
uses an empty registry that retrieves nothing,
so a schema that slipped past validation fails to apply instead of fetching.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jsonschema import exceptions as js_exceptions
from jsonschema import validators
from referencing import Registry

from orbit.core.history.events import TaskError

# Where the checked value sits, for messages like "input.items: ...".
_ROOT_LABEL = {
    "INPUT_CONTRACT_VIOLATION": "input",
    "OUTPUT_CONTRACT_VIOLATION": "output",
}
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
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})  # values, not subschemas


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
                elif key not in _DATA_KEYWORDS:
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
    except Exception as exc:  # unknown $schema URIs, unhashable oddities: report, never raise
        return (f"{type(exc).__name__}: {exc}",)
    return tuple(sorted(problems))


def check_schema(schema: Any, value: Any, code: str, label: str | None = None) -> TaskError | None:
    """``None`` when ``value`` satisfies ``schema``; otherwise a non-retryable
    :class:`TaskError` with ``code`` whose message names the first failing path
    and whose ``details.errors`` lists every failure (up to 20)."""
    if schema is None or schema is True or schema == {}:
        return None
    root = label or _ROOT_LABEL.get(code, "value")
    try:
        validator = compile_schema(schema)
    except Exception as exc:  # a schema that slipped past validation
        return _unusable(code, root, exc)
    return check_compiled(validator, value, code, root)


def compile_schema(schema: Any, linear: bool = False) -> Any:
    """The validator for ``schema`` (shared through a cache keyed by its canonical JSON), or None
    for a schema every value satisfies. Callers that check the same schema often keep the
    validator (`task_contracts.TaskContracts`) and call :func:`check_compiled`.

    ``linear``: `pattern`, `patternProperties` and `additionalProperties` match on RE2 (time linear
    in the input, see `expression_budget.linear_regex`) instead of Python's backtracking `re`, so
    a pattern such as ``^(a+)+$`` cannot hold the decider; a pattern RE2 does not support
    (backreferences, lookaround) makes the check fail as "cannot be applied", naming it. Task
    contracts use it: they are checked in the decider. A schema with `unevaluatedProperties` and
    `patternProperties` together is refused there (jsonschema would match them with `re`)."""
    if schema is None or schema is True or schema == {}:
        return None
    return _linear_validator(_key(schema)) if linear else _validator(_key(schema))


def check_compiled(validator: Any, value: Any, code: str, root: str) -> TaskError | None:
    """:func:`check_schema` with a validator from :func:`compile_schema`; ``root`` names the value
    in messages (``output`` gives ``output.items[0].sku: ...``)."""
    if validator is None:
        return None
    try:
        errors = list(validator.iter_errors(value))
    except Exception as exc:  # an unresolvable $ref, a schema that cannot be applied
        return _unusable(code, root, exc)
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


def _unusable(code: str, root: str, exc: Exception) -> TaskError:
    return TaskError(code, f"{root}: the schema cannot be applied: {type(exc).__name__}: {exc}",
                     retryable=False, details={"errors": []})


def _key(schema: Any) -> str:
    # No `default=`: a non-JSON value must not silently become a different schema.
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


@lru_cache(maxsize=512)
def _validator(key: str) -> Any:
    schema = json.loads(key)
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    # Local references resolve inside `schema`; anything else is Unresolvable, never retrieved.
    return cls(schema, registry=_NOTHING_TO_RETRIEVE)


@lru_cache(maxsize=512)
def _linear_validator(key: str) -> Any:
    schema = json.loads(key)
    if _uses_together(schema, "unevaluatedProperties", "patternProperties"):
        raise ValueError("`unevaluatedProperties` with `patternProperties` is not supported in task "
                         "contracts (their patterns could not run on RE2); use `additionalProperties`")
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    return _linear_class(cls)(schema, registry=_NOTHING_TO_RETRIEVE)


@lru_cache(maxsize=16)
def _linear_class(cls: Any) -> Any:
    own = {"pattern": _pattern, "patternProperties": _pattern_properties,
           "additionalProperties": _additional_properties}
    return validators.extend(cls, {k: v for k, v in own.items() if k in cls.VALIDATORS})


def _uses_together(schema: Any, *keywords: str) -> bool:
    seen: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            seen.update(k for k in keywords if k in node)
            stack.extend(v for k, v in node.items() if k not in _DATA_KEYWORDS)
        elif isinstance(node, list):
            stack.extend(node)
    return len(seen) == len(keywords)


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


def _message(err: js_exceptions.ValidationError) -> str:
    """jsonschema's message with the offending value written as JSON, as the user wrote it.

    Its messages start with the value's Python repr ("None is not of type 'object'").
    """
    shown = repr(err.instance)
    if not err.message.startswith(shown):
        return err.message
    try:
        as_json = json.dumps(err.instance, ensure_ascii=False)
    except (TypeError, ValueError):
        return err.message
    if len(as_json) > 80:
        as_json = as_json[:77] + "..."
    return as_json + err.message[len(shown):]


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
