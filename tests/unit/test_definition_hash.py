"""The canonical hash ignores formatting, key order and YAML-vs-JSON, and nothing else."""

from __future__ import annotations

import json

import pytest
import yaml
from orbit.core.definition import canonical_json, definition_hash, load_definition

YAML_A = """
orbit: 1
name: w
steps:
  a: {task: t, input: {x: 1, y: [1, 2]}}
  b:
    task: u      # a comment
    after: [a]
"""
YAML_B = """
name: w
steps:
  b: {after: [a], task: u}
  a:
    input:
      y:
        - 1
        - 2
      x: 1.0
    task: t
orbit: 1
"""


def test_hash_ignores_formatting_order_and_comments() -> None:
    assert load_definition(YAML_A).hash == load_definition(YAML_B).hash


def test_hash_same_for_json_text() -> None:
    as_json = json.dumps(yaml.safe_load(YAML_A), indent=3)
    assert load_definition(as_json).hash == load_definition(YAML_A).hash


def test_hash_format_and_stability() -> None:
    h = definition_hash({"b": 1, "a": [1, {"z": None, "y": "é"}]})
    assert h.startswith("sha256:") and len(h) == len("sha256:") + 64
    # Pinned: executions store this value, so the canonical form must never drift.
    assert canonical_json({"b": 1, "a": [1, {"z": None, "y": "é"}]}) == '{"a":[1,{"y":"é","z":null}],"b":1}'
    assert h == "sha256:" + __import__("hashlib").sha256(
        '{"a":[1,{"y":"é","z":null}],"b":1}'.encode()).hexdigest()


@pytest.mark.parametrize("change", [
    lambda d: d["steps"]["a"].update(task="t2"),
    lambda d: d["steps"]["a"]["input"].update(x=2),
    lambda d: d.update(version="2"),
    lambda d: d["steps"]["b"]["after"].append("a"),
])
def test_any_content_change_changes_the_hash(change) -> None:
    base = yaml.safe_load(YAML_A)
    changed = yaml.safe_load(YAML_A)
    change(changed)
    assert definition_hash(base) != definition_hash(changed)


def test_durations_hash_as_written() -> None:
    # Documented choice: the hash is of the text, so 1m and 60s differ (both run the same).
    one = {"orbit": 1, "name": "w", "steps": {"a": {"sleep": "1m"}}}
    sixty = {"orbit": 1, "name": "w", "steps": {"a": {"sleep": "60s"}}}
    assert definition_hash(one) != definition_hash(sixty)
    assert load_definition(json.dumps(one)).steps["a"].sleep_ms == load_definition(
        json.dumps(sixty)).steps["a"].sleep_ms


def test_non_json_values_are_refused() -> None:
    with pytest.raises(ValueError):
        canonical_json({"a": float("nan")})
    with pytest.raises(ValueError):
        canonical_json({1: "a"})
