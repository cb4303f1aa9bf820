"""Read definitions from YAML/JSON text or files; report problems per file for the CLI."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from orbit.core.definition.checks import Problems, check_size
from orbit.core.definition.model import Definition
from orbit.core.definition.parse import DefinitionError, parse_definition
from orbit.errors import Problem

# libyaml's parser when PyYAML has it (its wheels do): the pure-Python one takes seconds per MB.
_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Longer texts are refused before they are parsed (docs/limits.md): parsing is what costs.
MAX_DEFINITION_CHARS = 1_000_000


class _Loader(_SafeLoader):  # type: ignore[misc]
    """SafeLoader without the timestamp resolver: ``2024-06-01`` stays a string,
    so YAML and JSON spellings of a definition load (and hash) the same. It also
    notes duplicate keys, which YAML would silently resolve to the last one (two
    steps with the same name would lose the first)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[Problem] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[str, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.value == "<<":
                continue
            line = key_node.start_mark.line + 1
            if key_node.value in first_line:
                self.duplicates.append(Problem("", f"line {line}: duplicate key {key_node.value!r} "
                                                   f"(first at line {first_line[key_node.value]})"))
            else:
                first_line[key_node.value] = line
        mapping: dict[Any, Any] = super().construct_mapping(node, deep)
        return mapping


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}

_FILE_SUFFIXES = (".yaml", ".yml", ".json")


def parse_text(text: str, source: str | None = None) -> Any:
    """YAML (a superset of JSON) or JSON text -> document; raise :class:`DefinitionError`."""
    if len(text) > MAX_DEFINITION_CHARS:
        raise DefinitionError([Problem("", f"the definition is {len(text)} characters long, more than "
                                           f"{MAX_DEFINITION_CHARS}")], source)
    stripped = text.lstrip()
    try:
        if stripped.startswith(("{", "[")) or (source or "").endswith(".json"):
            try:
                duplicates: list[Problem] = []
                document = json.loads(text, object_pairs_hook=lambda pairs: _json_object(pairs, duplicates))
                if duplicates:
                    raise DefinitionError(duplicates, source)
                return document
            except json.JSONDecodeError as exc:
                if (source or "").endswith(".json"):
                    raise DefinitionError([Problem("", f"not valid JSON: line {exc.lineno} column "
                                                       f"{exc.colno}: {exc.msg}")], source) from None
        loader = _Loader(text)
        try:
            documents = []
            while loader.check_data():
                documents.append(loader.get_data())
        finally:
            loader.dispose()
        if loader.duplicates:
            raise DefinitionError(loader.duplicates, source)
    except yaml.YAMLError as exc:
        raise DefinitionError([Problem("", f"not valid YAML: {_yaml_message(exc)}")], source) from None
    except RecursionError:
        raise DefinitionError([Problem("", "document nested too deeply")], source) from None
    if not documents:
        raise DefinitionError([Problem("", "the document is empty")], source)
    if len(documents) != 1:
        raise DefinitionError([Problem("", f"expected one YAML document, found {len(documents)}")], source)
    # Aliases share one object per anchor, so loading an alias bomb is quick; whoever walks the
    # result (a test file's checks, hashing, JSON) expands it. Count values once per use, first.
    out = Problems()
    if not check_size(documents[0], out):
        raise DefinitionError(out.items, source)
    return documents[0]


def _json_object(pairs: list[tuple[str, Any]], duplicates: list[Problem]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            duplicates.append(Problem("", f"duplicate key {key!r}"))
        out[key] = value
    return out


def load_definition(path_or_text: str | os.PathLike[str]) -> Definition:
    """A path (``Path`` or a string naming a ``.yaml``/``.yml``/``.json`` file or an
    existing file) or the definition text itself. Errors name the file."""
    document, source = _read(path_or_text)
    return parse_definition(document, source)


def _read(path_or_text: str | os.PathLike[str]) -> tuple[Any, str | None]:
    if isinstance(path_or_text, os.PathLike) or _looks_like_path(path_or_text):
        path = Path(path_or_text)
        source = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise DefinitionError([Problem("", f"cannot read the file: {reason}")], source) from None
        return parse_text(text, source), source
    if not isinstance(path_or_text, str):
        raise DefinitionError([Problem("", f"expected a path or YAML/JSON text, not "
                                           f"{type(path_or_text).__name__}")])
    return parse_text(path_or_text), None


def _looks_like_path(value: object) -> bool:
    if not isinstance(value, str) or "\n" in value or not value.strip():
        return False
    if value.lower().endswith(_FILE_SUFFIXES) and not re.search(r":\s", value):
        return True
    try:
        return os.path.isfile(value)
    except (OSError, ValueError):
        return False


def validate_file(path: str | os.PathLike[str]) -> list[str]:
    """Lines ``FILE: path: message`` for every problem (empty when valid), for ``orbit validate``."""
    try:
        _read_and_parse(path)
    except DefinitionError as exc:
        source = exc.source or str(path)
        return [f"{source}: {problem}" for problem in exc.problems]
    return []


def _read_and_parse(path: str | os.PathLike[str]) -> Definition:
    document, source = _read(Path(path))
    return parse_definition(document, source)


def _yaml_message(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is not None:
        return f"line {mark.line + 1} column {mark.column + 1}: {problem}"
    return str(problem)
