"""S3PayloadStore's per-process shortcuts and S3's 403-for-missing answers (a fake client, no moto)."""

from __future__ import annotations

import hashlib
import io
from typing import Any

import pytest
from botocore.exceptions import ClientError
from orbit.adapters.s3 import HEAD_FIRST, S3PayloadStore
from orbit.errors import NotFound


def denied(op: str) -> ClientError:
    # What S3 answers for a missing key when the role has GetObject but not s3:ListBucket.
    return ClientError({"Error": {"Code": "403" if op == "HeadObject" else "AccessDenied"}}, op)


class FakeS3:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.calls: list[str] = []

    def put_object(self, Bucket: str, Key: str, Body: bytes, IfNoneMatch: str) -> None:
        self.calls.append("PutObject")
        self.objects.setdefault(Key, Body)

    def head_object(self, Bucket: str, Key: str) -> dict[str, Any]:
        self.calls.append("HeadObject")
        if Key not in self.objects:
            raise denied("HeadObject")
        return {}

    def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:
        self.calls.append("GetObject")
        if Key not in self.objects:
            raise denied("GetObject")
        return {"Body": io.BytesIO(self.objects[Key])}


def test_a_value_is_put_once_per_process_and_large_ones_are_probed_first() -> None:
    s3 = FakeS3()
    store = S3PayloadStore(s3, "b")
    small, large = b'"x"', b'"' + b"y" * HEAD_FIRST + b'"'
    assert store.put(small) == store.put(small) == "s3://b/payloads/" + hashlib.sha256(small).hexdigest()
    assert s3.calls == ["PutObject"]
    s3.calls.clear()
    store.put(large)  # HEAD answers 403 (no ListBucket): the conditional PUT decides
    store.put(large)
    assert s3.calls == ["HeadObject", "PutObject"]
    s3.calls.clear()
    S3PayloadStore(s3, "b").put(large)  # another process: the object exists, nothing uploaded
    assert s3.calls == ["HeadObject"]


def test_reads_are_cached_within_the_byte_budget() -> None:
    s3 = FakeS3()
    store = S3PayloadStore(s3, "b", cache_bytes=10)
    a, b = store.put(b'"aaaa"'), store.put(b'"bbbb"')
    s3.calls.clear()
    store.get(a), store.get(a), store.get(b), store.get(a)  # 6 + 6 bytes > 10: b evicts a
    assert s3.calls == ["GetObject", "GetObject", "GetObject"]


def test_a_missing_object_behind_a_403_is_reported_as_missing_with_key_and_bucket() -> None:
    with pytest.raises(NotFound) as info:
        S3PayloadStore(FakeS3(), "orbit-payloads").get("s3://orbit-payloads/payloads/" + "0" * 64)
    assert "'payloads/" + "0" * 64 + "'" in str(info.value) and "'orbit-payloads'" in str(info.value)
    assert "AccessDenied" in str(info.value)
