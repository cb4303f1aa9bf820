"""JSON Schema contracts: messages name the failing path; details list every error."""

from __future__ import annotations

import pytest
from orbit.core.definition.contracts import check_schema, validate_schema

ORDER = {
    "type": "object",
    "required": ["order_id", "items"],
    "properties": {
        "order_id": {"type": "string"},
        "items": {"type": "array", "items": {"type": "object", "required": ["sku"]}},
    },
}


def test_valid_value_passes() -> None:
    assert check_schema(ORDER, {"order_id": "o", "items": [{"sku": "a"}]}, "INPUT_CONTRACT_VIOLATION") is None


@pytest.mark.parametrize("schema", [None, True, {}])
def test_empty_schemas_accept_anything(schema: object) -> None:
    assert check_schema(schema, {"anything": [1]}, "INPUT_CONTRACT_VIOLATION") is None


def test_missing_property_is_named_with_its_path() -> None:
    error = check_schema(ORDER, {"order_id": "o"}, "INPUT_CONTRACT_VIOLATION")
    assert error is not None
    assert error.code == "INPUT_CONTRACT_VIOLATION" and error.retryable is False
    assert error.message == "input.items: 'items' is a required property"


def test_every_error_is_listed_in_details() -> None:
    error = check_schema(ORDER, {"order_id": 5, "items": [{"x": 1}, 3]}, "OUTPUT_CONTRACT_VIOLATION")
    assert error is not None
    assert error.message.startswith("output.") and error.message.endswith("(and 2 more)")
    assert error.details["count"] == 3
    assert sorted(e["path"] for e in error.details["errors"]) == [
        "output.items[0].sku", "output.items[1]", "output.order_id"]
    assert {e["keyword"] for e in error.details["errors"]} == {"required", "type"}


def test_other_codes_use_a_label() -> None:
    error = check_schema({"type": "object", "required": ["approved"]}, {}, "PAYLOAD_REFUSED", label="payload")
    assert error is not None and error.message == "payload.approved: 'approved' is a required property"
    generic = check_schema({"type": "string"}, 5, "SOME_CODE")
    assert generic is not None and generic.message == "value: 5 is not of type 'string'"


def test_declared_dialect_is_honoured() -> None:
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "maximum": 5,
              "exclusiveMaximum": True}
    assert check_schema(draft4, 5, "C") is not None
    assert check_schema(draft4, 4, "C") is None


def test_validate_schema_reports_problems() -> None:
    assert validate_schema(ORDER) == []
    assert validate_schema(True) == []
    assert validate_schema({"type": "objekt"}) == [
        "type: 'objekt' is not valid under any of the given schemas"]
    assert validate_schema({"properties": {"a": {"minimum": "x"}}}) == [
        "properties.a.minimum: 'x' is not of type 'number'"]
    assert validate_schema([1]) == ["a schema must be a mapping or a boolean, not list"]


def test_unresolvable_ref_becomes_a_task_error_not_a_crash() -> None:
    error = check_schema({"$ref": "#/definitions/missing"}, 1, "INPUT_CONTRACT_VIOLATION")
    assert error is not None and "cannot be applied" in error.message


def test_messages_show_values_as_json_not_python() -> None:
    # users write JSON: "null is not of type 'object'", never "None ..."
    err = check_schema({"type": "object"}, None, "PAYLOAD_REFUSED", label="payload")
    assert err is not None and err.message == "payload: null is not of type 'object'"
    err = check_schema({"properties": {"ok": {"type": "string"}}}, {"ok": True}, "INPUT_CONTRACT_VIOLATION")
    assert err is not None and err.message == "input.ok: true is not of type 'string'"
    assert err.details["errors"][0]["message"] == "true is not of type 'string'"
