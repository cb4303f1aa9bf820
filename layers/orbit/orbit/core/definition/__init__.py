"""Workflow definitions, format 1 (``docs/definitions.md``): load, validate, parse, hash.

- :func:`load_definition` reads YAML/JSON text or a file; :func:`parse_definition`
  takes a loaded document. Both raise ``orbit.errors.ValidationError`` (a
  :class:`DefinitionError` naming the file) listing every problem with its path.
- :func:`validate_definition` returns the problems instead of raising.
- :func:`definition_hash` is ``sha256:`` + hex of canonical JSON (see hashing.py:
  key order and formatting do not matter; ``1m`` and ``60s`` hash differently).
- :func:`parse_duration` turns ``500ms``/``30s``/``5m``/``2h``/``7d``/ISO 8601 into ms.
"""

from orbit.core.definition.durations import DurationError, format_duration, parse_duration
from orbit.core.definition.hashing import canonical_json, definition_hash
from orbit.core.definition.load import load_definition, parse_text, validate_file
from orbit.core.definition.model import Definition, RetryPolicy, Signal, Step
from orbit.core.definition.parse import DefinitionError, parse_definition
from orbit.core.definition.validate import validate_definition

__all__ = (
    "Definition", "DefinitionError", "DurationError", "RetryPolicy", "Signal", "Step",
    "canonical_json", "definition_hash", "format_duration", "load_definition", "parse_definition",
    "parse_duration", "parse_text", "validate_definition", "validate_file",
)
