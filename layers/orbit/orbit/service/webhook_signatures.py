"""The signature schemes of webhook triggers (docs/triggers.md, "Webhook"; service/webhooks.py).

- `hmac`: the header holds the hex HMAC-SHA256 of the raw body under the secret, optionally
  prefixed `sha256=` (GitHub's form).
- `stripe`: the header is Stripe's `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]`
  (other schemes such as `v0` are ignored, as Stripe's libraries do); a `v1` is the HMAC-SHA256 of
  `"<t>.<raw body>"` under the endpoint's signing secret (`whsec_...`, used as it is). One `v1`
  must match (Stripe sends two while a secret is rolled), compared in constant time, and `t` must
  be within the tolerance of the service clock (`now_ms`: the local stack's virtual clock there),
  so a captured request cannot be replayed later.

`problem(...)` returns None when the request is signed, else (code, message) for a 401.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

MAX_HEADER = 4096  # a Stripe header carries a few signatures; anything longer is not one


def problem(sig: dict[str, Any], key: bytes, body: bytes, given: str,
            now_ms: int) -> tuple[str, str] | None:
    header = str(sig["header"])
    if sig["scheme"] == "stripe":
        return _stripe(key, body, given, now_ms, int(sig.get("tolerance_ms") or 0), header)
    expected = hmac.new(key, body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(given.removeprefix("sha256=").lower(), expected):
        return "BAD_SIGNATURE", f"the {header} header is not the HMAC-SHA256 of the body; nothing was started"
    return None


def _stripe(key: bytes, body: bytes, given: str, now_ms: int, tolerance_ms: int,
            header: str) -> tuple[str, str] | None:
    stamp, signatures = None, []
    for part in given[:MAX_HEADER].split(","):
        name, _, value = part.strip().partition("=")
        if name == "t" and value.isdigit() and len(value) <= 12:
            stamp = int(value)
        elif name == "v1":
            signatures.append(value.strip().lower())
    if stamp is None or not signatures:
        return "BAD_SIGNATURE", (f"the {header} header is not t=<unix seconds>,v1=<hex> (Stripe's form); "
                                 "nothing was started")
    expected = hmac.new(key, f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(s, expected) for s in signatures):
        return "BAD_SIGNATURE", (f"no v1 signature of the {header} header is the HMAC-SHA256 of "
                                 "t.body; nothing was started")
    age_s = now_ms // 1000 - stamp
    if abs(age_s) * 1000 > tolerance_ms:
        when = f"{age_s} s old" if age_s > 0 else f"{-age_s} s in the future"
        return "STALE_SIGNATURE", (f"the {header} header's time is {when}; at most {tolerance_ms // 1000} s "
                                   "is accepted (a replayed request?); nothing was started")
    return None


def sign_stripe(secret: bytes, body: bytes, unix_s: int) -> str:
    """The `Stripe-Signature` value Stripe would send for `body` at `unix_s`: for tests and tools."""
    return f"t={unix_s},v1=" + hmac.new(secret, f"{unix_s}.".encode() + body, hashlib.sha256).hexdigest()
