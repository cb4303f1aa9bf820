"""JSON Schema checks on hostile values (docs/limits.md, "JSON Schemas"): CPU time (process_time,
meaningful on a shared machine) and peak memory of each check, and the keyword steps an ordinary
schema spends on a large value against the budget it gets.

    python benchmarks/bench_schemas.py [--rows 50000]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from typing import Any

from orbit.core.definition import schema_budget
from orbit.core.definition.contracts import check_schema, compile_schema


def measure(label: str, schema: Any, value: Any) -> None:
    t0 = time.process_time()
    error = check_schema(schema, value, "INPUT_CONTRACT_VIOLATION")
    cpu = time.process_time() - t0
    tracemalloc.start()
    check_schema(schema, value, "INPUT_CONTRACT_VIOLATION")
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    outcome = "accepted" if error is None else error.message[:90]
    print(f"  {label:<44} {cpu:7.3f} s CPU {peak:8.1f} MB  {outcome}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000, help="array length of the large cases")
    n = parser.parse_args().rows
    rows = [{"i": i} for i in range(n)]
    measure(f"uniqueItems: {n:,} objects + a duplicate", {"uniqueItems": True}, [*rows, {"i": 7.0}])
    members = [{"k": "y" * 20, "n": i} for i in range(2_000)]
    measure(f"enum of 2,000 objects vs {n // 2:,} items", {"items": {"enum": members}}, list(range(n // 2)))
    nested: Any = 0
    for _ in range(60):
        nested = [nested]
    twice = {"$defs": {"t": {"allOf": [{"items": {"$ref": "#/$defs/t"}}] * 2}}, "$ref": "#/$defs/t"}
    measure("allOf of two self-$refs, 60 deep (2^60)", twice, nested)
    record = {"a": {"type": "integer"}, "b": {"type": "string"},
              "c": {"type": "array", "items": {"type": "number"}}}
    ordinary = {"type": "array", "items": {"type": "object", "required": ["a", "b"], "properties": record}}
    value = [{"a": i, "b": "x", "c": [1, 2]} for i in range(n)]
    measure(f"an ordinary schema, {n:,} records", ordinary, value)
    budget = schema_budget.steps_for(value)
    checking = schema_budget.budgeted(compile_schema(ordinary), budget)
    list(checking.iter_errors(value))
    left = checking.format_checker.left
    print(f"  steps spent on the {n:,} records: {budget - left:,} of a budget of {budget:,}")


if __name__ == "__main__":
    main()
