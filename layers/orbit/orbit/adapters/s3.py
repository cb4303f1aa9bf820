"""PayloadStore on S3: bodies too large for a DynamoDB item or an SQS message.

Objects are content-addressed (`payloads/<sha256>`), written with a conditional
put (`IfNoneMatch: "*"`): a retried decider or worker that spills the same body
again writes nothing new, and an object, once written, is never replaced, so a
reference stored in history always reads back the bytes it was made from.
References look like `s3://bucket/payloads/<sha256>`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from botocore.exceptions import ClientError

from orbit.errors import NotFound, ValidationError

PREFIX = "payloads/"


class S3PayloadStore:
    def __init__(self, client: Any, bucket: str) -> None:
        self._s3 = client
        self._bucket = bucket

    def put(self, data: bytes) -> str:
        key = PREFIX + hashlib.sha256(data).hexdigest()
        try:
            self._s3.put_object(Bucket=self._bucket, Key=key, Body=data, IfNoneMatch="*")
        except ClientError as e:
            # 412: the same content is already stored (content addressing makes that a success).
            # 409 ConditionalRequestConflict: a concurrent writer of the same bytes is finishing.
            code = e.response.get("Error", {}).get("Code")
            if code not in ("PreconditionFailed", "ConditionalRequestConflict"):
                raise
        return f"s3://{self._bucket}/{key}"

    def get(self, ref: str) -> bytes:
        bucket, key = parse_ref(ref)
        try:
            body: bytes = self._s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise NotFound(f"payload {ref} does not exist") from None
            raise
        if PREFIX + hashlib.sha256(body).hexdigest() != key:
            raise ValidationError(f"payload {ref}: content does not match its sha256 name", "payload")
        return body


def parse_ref(ref: str) -> tuple[str, str]:
    if not isinstance(ref, str) or not ref.startswith("s3://") or "/" not in ref[5:]:
        raise ValidationError(f"not an s3 payload reference: {ref!r}", "payload_ref")
    bucket, key = ref[5:].split("/", 1)
    return bucket, key
