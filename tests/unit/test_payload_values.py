"""Which values `extract` moves out of a body, and that `resolve` puts back exactly what was there."""

from __future__ import annotations

import copy
import inspect
import os
import sys
from typing import Any

import pytest
from orbit.adapters.dynamodb.codec import decode, encode
from orbit.adapters.memory import MemoryPayloadStore
from orbit.adapters.payload_values import extract, resolve
from orbit.errors import NotFound

LIMIT = 1000


class CountingStore(MemoryPayloadStore):
    def __init__(self) -> None:
        super().__init__()
        self.puts: list[int] = []

    def put(self, data: bytes) -> str:
        self.puts.append(len(data))
        return super().put(data)


def big(n: int = 3 * LIMIT) -> str:
    return os.urandom(n // 2).hex()


def test_values_nested_deeper_than_the_walk_stay_in_the_body_and_round_trip() -> None:
    # json.dumps takes one level of the recursion limit per level of nesting, the walk two: at
    # 3/4 of the room left, json.dumps still serialises this and the walk gives up cleanly.
    room = sys.getrecursionlimit() - len(inspect.stack(0))
    deep: Any = big()
    for _ in range(room * 3 // 4):
        deep = [deep]
    body = {"events": [{"output": deep}]}
    store = CountingStore()
    item = encode(body, store, value_limit=LIMIT)
    assert "vref" not in item and decode(item, store) == body


def test_unchanged_parts_of_the_body_are_the_callers_objects() -> None:
    units = {f"u{i}": {"input": {"i": i}, "output": None} for i in range(500)}
    body = {"units": units, "input": {"blob": big()}}
    reduced, refs = extract(body, CountingStore(), LIMIT)
    assert reduced["units"] is units and [p for p, _ in refs] == [["input", "blob"]]


def test_the_deepest_large_part_is_referenced_and_shared_between_input_and_output() -> None:
    blob = big()
    body = {"events": [{"type": "StepSucceeded", "output": {"blob": blob, "n": 1}},
                       {"type": "StepScheduled", "input": {"data": blob}}],
            "effects": [{"kind": "dispatch_task", "input": {"data": blob}}]}
    before = copy.deepcopy(body)
    store = CountingStore()
    reduced, refs = extract(body, store, LIMIT)
    assert body == before  # the caller's objects are untouched
    assert [p for p, _ in refs] == [["events", 0, "output", "blob"], ["events", 1, "input", "data"],
                                    ["effects", 0, "input", "data"]]
    assert len({r for _, r in refs}) == 1 and store.puts == [len(blob) + 2]  # one object, put once
    assert reduced["events"][0]["output"] == {"blob": None, "n": 1}
    assert resolve(reduced, refs, store, "test") == before


def test_a_large_container_of_small_parts_is_referenced_whole_but_engine_structure_never() -> None:
    rows = [{"i": i, "t": "x" * 40} for i in range(100)]  # ~5 KB, every row small
    many = [{"type": "StepSucceeded", "output": {"n": i, "t": "y" * 300}} for i in range(20)]
    store = CountingStore()
    reduced, refs = extract({"events": [{"output": {"rows": rows}}, *many]}, store, LIMIT)
    assert [p for p, _ in refs] == [["events", 0, "output", "rows"]]
    assert reduced["events"][1:] == many  # 20 medium values: the events list stays (whole-body spill)


def test_user_data_shaped_like_a_reference_is_left_alone() -> None:
    lookalike = {"payload_ref": "s3://b/payloads/x", "payload_refs": [[["a"], "mem://x"]], "$ref": "x"}
    body = {"events": [{"output": lookalike}, {"input": {"blob": big()}}]}
    store = MemoryPayloadStore()
    item = encode(body, store, value_limit=LIMIT)
    assert item["vref"] == {"N": "1"} and decode(item, store) == body


def test_small_bodies_make_no_payload_store_call() -> None:
    store = CountingStore()
    item = encode({"events": [{"output": {"n": "x" * 500}}]}, store, value_limit=LIMIT)
    assert store.puts == [] and "vref" not in item


def test_a_missing_value_names_the_execution_and_the_path() -> None:
    store = MemoryPayloadStore()
    item = {"pk": {"S": "EXEC#order-7"}, "sk": {"S": "C#000000000004"},
            **encode({"events": [{"output": big()}]}, store, value_limit=LIMIT)}
    with pytest.raises(NotFound) as info:
        decode(item, MemoryPayloadStore())
    assert "execution 'order-7' (item C#000000000004)" in str(info.value)
    assert "body.events[0].output" in str(info.value) and "mem://" in str(info.value)


def test_a_container_read_back_at_two_paths_is_two_objects() -> None:
    rows = [{"i": i, "t": "x" * 40} for i in range(100)]
    store = MemoryPayloadStore()
    body = {"events": [{"output": rows}], "effects": [{"input": rows}]}
    item = encode(body, store, value_limit=LIMIT)
    assert item["vref"] == {"N": "2"} and len(store._data) == 1
    read = decode(item, store)
    assert read == body and read["events"][0]["output"] is not read["effects"][0]["input"]
