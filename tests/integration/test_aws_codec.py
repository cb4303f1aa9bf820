"""Item bodies (adapters/dynamodb/codec.py): the preset dictionary, old items, spills."""

from __future__ import annotations

import json
import os
import zlib
from typing import Any

from orbit.adapters.dynamodb.codec import decode, encode


class Payloads:
    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}

    def put(self, data: bytes) -> str:
        ref = f"r{len(self.blobs)}"
        self.blobs[ref] = data
        return ref

    def get(self, ref: str) -> bytes:
        return self.blobs[ref]


COMMIT: dict[str, Any] = {
    "events": [{"seq": 4, "timestamp_ms": 1796083078417, "type": "StepSucceeded", "step": "s1", "attempt": 1,
                "output": {"n": 1, "text": "é ✓"}}],
    "effects": [{"kind": "dispatch_task", "execution_id": "x", "unit": "s2", "task": "t", "queue": "q",
                 "input": {"prev": 1}, "attempt": 1, "token": "PAQy4yjGuGsS2PhHYjQ7AA",
                 "idempotency_key": "x:s2", "deadline_ms": None, "redelivery": False}],
    "inbound_ids": ["result:q-Bxo68cNuMLQtIAyB2mFA"],
}


def test_small_bodies_use_the_dictionary_and_round_trip() -> None:
    item = encode(COMMIT, Payloads())
    assert set(item) == {"zd"}
    assert decode(item, Payloads()) == COMMIT
    plain = zlib.compress(json.dumps(COMMIT, separators=(",", ":")).encode(), 6)
    assert len(item["zd"]["B"]) < 0.8 * len(plain)  # the point of the dictionary


def test_items_written_before_the_dictionary_still_decode() -> None:
    old = {"z": {"B": zlib.compress(json.dumps(COMMIT).encode())}}
    assert decode(old, Payloads()) == COMMIT


def test_large_bodies_compress_plainly_or_spill_to_the_payload_store() -> None:
    payloads = Payloads()
    big = {"rows": ["same text again"] * 10_000}
    item = encode(big, payloads)
    assert set(item) == {"z"} and decode(item, payloads) == big
    noise = {"blob": os.urandom(200_000).hex()}
    item = encode(noise, payloads, spill_limit=100_000)
    assert "ref" in item and decode(item, payloads) == noise
