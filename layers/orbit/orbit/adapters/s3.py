"""PayloadStore on S3: values and bodies too large for a DynamoDB item or an SQS message.

Objects are content-addressed (`payloads/<sha256>`; whole queue bodies `messages/<sha256>`),
written with a conditional put (`IfNoneMatch: "*"`): a retried decider or worker that stores
the same bytes again writes nothing new, and an object, once written, is never replaced, so a
reference stored in history always reads back the bytes it was made from.
References look like `s3://bucket/payloads/<sha256>`.

Per process (one store per Lambda instance, `orbit.aws.wiring.services()`):
- the digests this process wrote or read are remembered, so the same value in
  the next commit, snapshot or message costs no request at all;
- a value of a megabyte or more that this process has not seen is probed with
  HEAD first: another process (the worker that produced it) has usually stored
  it already, and a HEAD is cheaper than uploading 50 MB to be told 412;
- the bytes read are kept in a bounded LRU cache, because every cold load of an
  execution reads the same outputs again (its snapshot references them).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any

from botocore.exceptions import ClientError

from orbit.errors import NotFound, ValidationError

PREFIX = "payloads/"
MESSAGES = "messages/"  # whole queue bodies: read once, removed by the bucket's lifecycle rule
HEAD_FIRST = 1024 * 1024  # below this a PUT that answers 412 is as cheap as a HEAD
CACHE_BYTES = 64 * 1024 * 1024  # of a 512 MB decider; one 50 MB output fits
KNOWN_DIGESTS = 100_000  # ~10 MB of digests at most


class S3PayloadStore:
    def __init__(self, client: Any, bucket: str, cache_bytes: int = CACHE_BYTES) -> None:
        self._s3 = client
        self._bucket = bucket
        self._lock = threading.Lock()
        self._known: OrderedDict[str, None] = OrderedDict()  # keys that exist in the bucket
        self._cache: OrderedDict[str, bytes] = OrderedDict()  # key -> bytes, least recent first
        self._cache_size = 0
        self._cache_max = cache_bytes

    def put(self, data: bytes, verify: bool = False) -> str:
        """Store `data` (once) and return its reference. `verify`: ask S3 even when this process
        has seen the object, because a collector may have deleted it since (retention.py)."""
        return self._put(PREFIX, data, verify)

    def put_message(self, data: bytes) -> str:
        """A queue body too large for SQS: under `messages/`, which a lifecycle rule empties after
        SQS's longest retention (template.yaml), since no history ever references it."""
        return self._put(MESSAGES, data, False)

    def _put(self, prefix: str, data: bytes, verify: bool) -> str:
        key = prefix + hashlib.sha256(data).hexdigest()
        ref = f"s3://{self._bucket}/{key}"
        if not verify and self._is_known(key):
            return ref
        if (verify or len(data) >= HEAD_FIRST) and self._exists(key):
            self._remember(key)
            return ref
        try:
            self._s3.put_object(Bucket=self._bucket, Key=key, Body=data, IfNoneMatch="*")
        except ClientError as e:
            # 412: the same content is already stored (content addressing makes that a success).
            # 409 ConditionalRequestConflict: a concurrent writer of the same bytes is finishing.
            code = e.response.get("Error", {}).get("Code")
            if code not in ("PreconditionFailed", "ConditionalRequestConflict"):
                raise
        self._remember(key)
        return ref

    def get(self, ref: str) -> bytes:
        bucket, key = parse_ref(ref)
        with self._lock:
            cached = self._cache.get(ref)
            if cached is not None:
                self._cache.move_to_end(ref)
                return cached
        try:
            body: bytes = self._s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code")
            if code in ("NoSuchKey", "404"):
                raise NotFound(f"payload object {key!r} does not exist in bucket {bucket!r}") from None
            if code in ("AccessDenied", "403"):
                # S3 answers 403, not 404, for a missing key when the caller lacks s3:ListBucket
                # (the template grants only GetObject/PutObject), so this is usually a missing object.
                raise NotFound(f"payload object {key!r} in bucket {bucket!r} is missing or not readable "
                               f"(S3 said {code}, as it does for a missing key without s3:ListBucket)"
                               ) from None
            raise
        if key.rsplit("/", 1)[-1] != hashlib.sha256(body).hexdigest():
            raise ValidationError(f"payload {ref}: content does not match its sha256 name", "payload")
        if bucket == self._bucket:
            self._remember(key)
        self._keep(ref, body)
        return body

    def _exists(self, key: str) -> bool:
        try:
            self._s3.head_object(Bucket=self._bucket, Key=key)
        except ClientError as e:
            # 403: without s3:ListBucket S3 hides whether the key exists; the conditional PUT decides.
            if e.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound", "403",
                                                            "AccessDenied"):
                return False
            raise
        return True

    def _is_known(self, key: str) -> bool:
        with self._lock:
            if key in self._known:
                self._known.move_to_end(key)
                return True
            return False

    def _remember(self, key: str) -> None:
        with self._lock:
            self._known[key] = None
            self._known.move_to_end(key)
            while len(self._known) > KNOWN_DIGESTS:
                self._known.popitem(last=False)

    def _keep(self, ref: str, body: bytes) -> None:
        if len(body) > self._cache_max:
            return
        with self._lock:
            if ref in self._cache:
                return
            self._cache[ref] = body
            self._cache_size += len(body)
            while self._cache_size > self._cache_max:
                _, old = self._cache.popitem(last=False)
                self._cache_size -= len(old)


    def delete(self, digest: str) -> None:
        """Remove one object (the retention collector's call, once nothing references it)."""
        key = PREFIX + digest
        with self._lock:
            self._known.pop(key, None)
            ref = f"s3://{self._bucket}/{key}"
            old = self._cache.pop(ref, None)
            if old is not None:
                self._cache_size -= len(old)
        self._s3.delete_object(Bucket=self._bucket, Key=key)


def parse_ref(ref: str) -> tuple[str, str]:
    if not isinstance(ref, str) or not ref.startswith("s3://") or "/" not in ref[5:]:
        raise ValidationError(f"not an s3 payload reference: {ref!r}", "payload_ref")
    bucket, key = ref[5:].split("/", 1)
    return bucket, key


ARCHIVE = "archive/"  # ended executions' histories (orbit/service/archive.py); a lifecycle rule ages them


class S3Archive:
    """Archive port on S3: `archive/<quoted execution id>.jsonl.gz`, one object per execution."""

    def __init__(self, client: Any, bucket: str) -> None:
        self._s3 = client
        self._bucket = bucket

    @staticmethod
    def key(execution_id: str) -> str:
        from urllib.parse import quote

        return f"{ARCHIVE}{quote(execution_id, safe='')}.jsonl.gz"

    def put(self, execution_id: str, data: bytes) -> None:
        self._s3.put_object(Bucket=self._bucket, Key=self.key(execution_id), Body=data,
                            ContentType="application/gzip")

    def get(self, execution_id: str) -> bytes | None:
        try:
            body: bytes = self._s3.get_object(Bucket=self._bucket, Key=self.key(execution_id))["Body"].read()
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise
        return body
