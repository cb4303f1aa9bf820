"""The JSON form shared by events, effects, messages: a tagged dataclass.

Each is a frozen dataclass written as `{<tag key>: <tag>, <field>: <value>, ...}`
in field order, a `TaskError` field as its own dict; reading back takes the
known fields and finds the class in a registry keyed by the tag. One copy here
so the three forms cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

from orbit.core.history.task_error import JSON, TaskError
from orbit.errors import ValidationError

T = TypeVar("T")


def tagged_dict(obj: Any, tag_key: str, tag: str) -> dict[str, JSON]:
    """`obj`'s fields as a dict after `{tag_key: tag}`; TaskError values as their dicts.

    Fields named in the class's `OMIT_IF_NONE` are left out while None: a field added
    later keeps every record written without it byte-identical (golden histories,
    stored commits), and reading back gives the same None default.
    """
    d: dict[str, JSON] = {tag_key: tag}
    omit = getattr(type(obj), "OMIT_IF_NONE", ())
    for f in fields(obj):
        v = getattr(obj, f.name)
        if v is None and f.name in omit:
            continue
        d[f.name] = v.to_dict() if isinstance(v, TaskError) else v
    return d


def known_fields(cls: Any, d: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of `d` that are fields of dataclass `cls` (other keys are ignored)."""
    return {f.name: d[f.name] for f in fields(cls) if f.name in d}


def registry(tag_attr: str, *classes: type[T]) -> dict[str, type[T]]:
    """`{cls.<tag_attr>: cls}` for each class."""
    return {getattr(c, tag_attr): c for c in classes}


def lookup(types: Mapping[str, type[T]], d: Mapping[str, Any], tag_key: str, path: str,
           what: str = "", list_known: bool = False) -> type[T]:
    """The class registered under `d[tag_key]`; else ValidationError at `path`:
    "unknown <what><tag_key> 'x'", with "; expected one of [...]" if `list_known`."""
    cls = types.get(d.get(tag_key))  # type: ignore[arg-type]
    if cls is None:
        known = f"; expected one of {sorted(types)}" if list_known else ""
        raise ValidationError(f"unknown {what}{tag_key} {d.get(tag_key)!r}{known}", path)
    return cls
