"""Parsing the DSL.md example and the normalisations the decider relies on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from orbit.core.definition import (
    Definition,
    DefinitionError,
    RetryPolicy,
    load_definition,
    parse_definition,
    parse_text,
)
from orbit.errors import ValidationError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "definitions"
EXAMPLE = FIXTURES / "order_fulfilment.yaml"


@pytest.fixture(scope="module")
def example() -> Definition:
    return load_definition(EXAMPLE)


def minimal(**steps: object) -> dict:
    return {"orbit": 1, "name": "w", "steps": steps or {"a": {"task": "t"}}}


def test_header(example: Definition) -> None:
    assert (example.name, example.version, example.timeout_ms) == ("order-fulfilment", "3", 2 * 3600_000)
    assert example.input_schema == {"type": "object", "required": ["order_id", "items"]}
    assert example.output_schema == {"type": "object"}
    assert example.output == {"order": "{% input.order_id %}", "shipments": "{% steps.ship.output %}"}
    assert example.signals["approval"].schema == {"type": "object", "required": ["approved"]}
    assert list(example.steps) == ["reserve", "charge", "ship", "approval", "notify", "cool_down",
                                   "invoice", "total"]


def test_kinds_and_targets(example: Definition) -> None:
    s = example.steps
    assert [s[n].kind for n in s] == ["task", "task", "task", "wait_for", "http", "sleep", "workflow",
                                      "compute"]
    assert s["reserve"].task == "inventory.reserve"
    assert s["approval"].wait_for == "approval"
    assert s["notify"].http["method"] == "POST"
    assert s["cool_down"].sleep_ms == 600_000 and s["cool_down"].sleep_until is None
    assert s["invoice"].workflow == "invoicing"
    assert s["total"].compute == "{% $sum(steps.ship.output.cost) %}"


def test_dependencies_come_from_after_and_expression_reads(example: Definition) -> None:
    s = example.steps
    assert s["reserve"].depends_on == frozenset()
    assert s["charge"].depends_on == {"reserve"}  # read in input, no `after`
    assert s["ship"].after == ("charge",) and s["ship"].depends_on == {"charge"}
    assert s["total"].depends_on == {"ship"}
    assert s["notify"].depends_on == frozenset()  # hooks.* is known from the start


def test_retry_merges_over_defaults(example: Definition) -> None:
    assert example.steps["reserve"].retry == RetryPolicy(3, 1000, 2.0, 60_000, "none", ())
    assert example.steps["charge"].retry == RetryPolicy(5, 1000, 2.0, 60_000, "none", ("CARD_DECLINED",))
    # kinds that cannot be retried get the single-attempt policy, whatever the defaults say
    assert example.steps["approval"].retry == RetryPolicy()
    assert example.steps["total"].retry.max_attempts == 1


def test_timeouts(example: Definition) -> None:
    s = example.steps
    assert s["reserve"].timeout_ms == 20_000 and s["reserve"].queue_timeout_ms == 300_000
    assert s["charge"].timeout_ms == 30_000  # defaults.timeout
    assert s["approval"].timeout_ms == 7 * 86_400_000
    assert s["invoice"].timeout_ms is None  # defaults.timeout is for task/http attempts only
    assert s["cool_down"].timeout_ms is None


def test_fan_out_fields(example: Definition) -> None:
    ship = example.steps["ship"]
    assert ship.for_each == "{% input.items %}" and ship.concurrency == 10 and ship.tolerated_failures == 0
    assert example.steps["reserve"].for_each is None and example.steps["reserve"].concurrency is None


def test_compensate_is_a_step(example: Definition) -> None:
    comp = example.steps["reserve"].compensate
    assert comp is not None
    assert (comp.name, comp.kind, comp.task) == ("compensate:reserve", "task", "inventory.release")
    assert comp.input == {"reservation": "{% steps.reserve.output.reservation_id %}"}
    assert comp.retry.max_attempts == 3 and comp.timeout_ms == 30_000
    assert example.steps["charge"].compensate is None


def test_extensions_and_optional_fields() -> None:
    d = parse_definition(minimal(
        a={"task": "t", "queue": "fast-lane", "on_failure": "continue", "retry": {"jitter": "full"}},
        b={"sleep": {"until": "{% steps.a.output.at %}"}},
        c={"http": {"method": "get", "url": "{% input.url %}", "timeout": "5s"}},
    ))
    a, b, c = d.steps.values()
    assert a.queue == "fast-lane" and a.on_failure == "continue" and a.retry.jitter == "full"
    assert b.sleep_until == "{% steps.a.output.at %}" and b.depends_on == {"a"}
    assert c.timeout_ms == 5000  # http.timeout when the step has none
    assert c.http["method"] == "GET"  # any case in the file, upper case for the adapter
    assert d.version == "1" and d.timeout_ms is None and d.output is None


def test_yaml_and_json_forms_are_the_same_definition(example: Definition) -> None:
    from_json = load_definition(FIXTURES / "order_fulfilment.json")
    assert from_json == example
    assert from_json.hash == example.hash


def test_text_and_path_inputs() -> None:
    text = EXAMPLE.read_text()
    assert load_definition(text).hash == load_definition(str(EXAMPLE)).hash
    assert load_definition(json.dumps(minimal())).name == "w"


def test_raw_is_a_copy() -> None:
    doc = minimal()
    d = parse_definition(doc)
    doc["steps"]["a"]["task"] = "changed"
    assert d.raw["steps"]["a"]["task"] == "t" and d.steps["a"].task == "t"


def test_missing_file_is_a_validation_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ValidationError) as caught:
        load_definition(missing)
    assert str(missing) in str(caught.value) and "cannot read" in str(caught.value)


def test_yaml_dates_stay_strings() -> None:
    assert parse_text("v: 2024-06-01\n") == {"v": "2024-06-01"}


@pytest.mark.parametrize("text, message", [
    ("- a\n- b\n", "must be a mapping at the top level, not a list"),
    ("a: 1\n---\nb: 2\n", "expected one YAML document, found 2"),
    ('{"orbit": 1,', "not valid YAML"),
    ("", "the document is empty"),
    ("null\n", "must be a mapping at the top level, not null"),
])
def test_unreadable_documents(text: str, message: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        load_definition(text)
    assert message in str(caught.value)


def test_parse_definition_source_names_the_file() -> None:
    with pytest.raises(DefinitionError) as caught:
        parse_definition({"orbit": 1}, source="flows/x.yaml")
    assert str(caught.value).startswith("flows/x.yaml: name: required")
    assert {p.path for p in caught.value.problems} == {"name", "steps"}


def test_duplicate_json_keys_are_refused() -> None:
    with pytest.raises(DefinitionError, match="duplicate key 'a'"):
        load_definition('{"orbit": 1, "name": "w", "steps": {"a": {"task": "t"}, "a": {"task": "u"}}}')


def test_yaml_merge_keys_may_override_without_being_duplicates() -> None:
    d = load_definition("orbit: 1\nname: w\nsteps:\n  a: &base {task: t, timeout: 5s}\n"
                        "  b: {<<: *base, timeout: 10s}\n")
    assert (d.steps["a"].timeout_ms, d.steps["b"].timeout_ms, d.steps["b"].task) == (5000, 10000, "t")
