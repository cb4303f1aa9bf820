"""SigV4 checked as a Lambda function URL with `AuthType: AWS_IAM` checks it, for the local stack's
durable API (orbit/local/durable_aws.py): the signature is computed again with botocore's own
signer from the secret of the request's access key, for the service `lambda` and the request's
region, and compared in constant time. On AWS, Lambda does this before the handler runs."""

from __future__ import annotations

import datetime as dt
import hmac
import re
from collections.abc import Callable, Mapping

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)"
    r"/aws4_request, ?SignedHeaders=(?P<signed>[a-z0-9;_.-]+), ?Signature=(?P<sig>[0-9a-f]{64})$"
)
MAX_SKEW_S = 300  # AWS refuses a request signed more than 5 minutes away from its clock


def refusal(method: str, url: str, headers: Mapping[str, str], body: bytes,
            secret_for: Callable[[str], str | None], now: dt.datetime,
            service: str = "lambda") -> str | None:
    """Why this request's signature is not accepted (one line), or None when it is."""
    h = {k.lower(): v for k, v in headers.items()}
    m = AUTH.match(h.get("authorization", ""))
    if m is None:
        return "missing or malformed SigV4 Authorization header"
    if m["service"] != service:
        return f"signed for service {m['service']!r}, not {service!r}"
    secret = secret_for(m["key"])
    if secret is None:
        return f"unknown access key {m['key'][:32]!r}"
    stamp = h.get("x-amz-date", "")
    try:
        when = dt.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return "missing or malformed X-Amz-Date"
    if stamp[:8] != m["date"]:
        return "X-Amz-Date does not match the credential scope's date"
    if abs((now - when).total_seconds()) > MAX_SKEW_S:
        return f"signed at {stamp}, more than {MAX_SKEW_S} s from now"
    signed = m["signed"].split(";")
    if "host" not in signed:
        return "the Host header is not signed"
    missing = [n for n in signed if n not in h]
    if missing:
        return f"signed header {missing[0]!r} is not in the request"
    req = AWSRequest(method=method, url=url, data=body, headers={n: h[n] for n in signed})
    req.context["timestamp"] = stamp
    token = h.get("x-amz-security-token")
    auth = SigV4Auth(Credentials(m["key"], secret, token), service, m["region"])
    canonical = auth.canonical_request(req)
    expected = auth.signature(auth.string_to_sign(req, canonical), req)
    if not hmac.compare_digest(expected, m["sig"]):
        return "the request signature does not match (SignatureDoesNotMatch)"
    return None
