"""A definition stored before schema patterns were refused (a backreference RE2 cannot run) is still
read back by another process's DynamoRegistry, so its running executions keep their definition; the
check that meets the pattern fails naming it (tests/unit/test_schema_re2.py)."""

from __future__ import annotations

import pytest
from aws_resources import Clients, Stack
from orbit.adapters.dynamodb import DynamoRegistry
from orbit.adapters.s3 import S3PayloadStore
from orbit.core.definition import parse_definition
from orbit.core.definition.contracts import check_schema
from orbit.errors import ValidationError
from orbit.workflow import CodeRegistry

DOC = {"orbit": 1, "name": "old-schema", "version": "1", "steps": {"a": {"task": "t.one"}},
       "input": {"type": "object", "properties": {"code": {"type": "string", "pattern": "^(a)\\1$"}}}}


class FixedClock:
    def now_ms(self) -> int:
        return 1_767_225_600_000


def _registry(clients: Clients, stack: Stack) -> DynamoRegistry:
    return DynamoRegistry(clients.dynamodb, stack.table, S3PayloadStore(clients.s3, stack.bucket),
                          FixedClock(), code=CodeRegistry())


def test_a_stored_definition_with_an_re2_unsupported_pattern_loads(clients: Clients, stack: Stack) -> None:
    with pytest.raises(ValidationError, match=r"input\.properties\.code\.pattern: regular expression"):
        parse_definition(DOC)  # registering it today is refused
    old = parse_definition(DOC, stored=True)  # as registered before the rule
    _registry(clients, stack).register(old)
    loaded = _registry(clients, stack).get_build("old-schema", "1", old.hash)  # a fresh process: no cache
    assert loaded.hash == old.hash and loaded.input_schema == DOC["input"]
    err = check_schema(loaded.input_schema, {"code": "aa"}, "INPUT_CONTRACT_VIOLATION", schema_path="input")
    assert err is not None and err.message.startswith(
        "input: the schema cannot be applied: input.properties.code.pattern: regular expression /^(a)\\1$/")
