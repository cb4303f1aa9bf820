"""Hook tokens as credentials: derived from a stack key, stored only as a hash.

A hook token resumes an execution's wait, so nothing the engine stores holds it.
With a key (a deployment secret, see docs/security.md) the token of hook NAME of
execution E is `HMAC-SHA256(key, "orbit-hook" 0 E 0 NAME)`, URL-safe base64 (256
bits). `HookCreated` records only its SHA-256 (`token_sha256`); the engine derives
the token again whenever an expression reads `hooks.NAME.token`, and a resume is
checked by hashing the token it presents.

Histories written before this (and in-process engines without a key, such as the
simulator) hold the plain token in `HookCreated.token`: they keep working as they
did, the token is just read from the history instead of derived.

The key reaches a decision through its id source (`ids.hook_key`, a callable so it
is read only when a hook needs it); the decider hands a `KeySource` for it to the
runtimes (`decide.runtime_for`), which pass it to `token_of`. Without one (a replay
check on an exported history) there is no key, and `token_of` gives a placeholder
instead of the token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable
from typing import Any

# A store is given `DIGEST_PREFIX + sha256 hex` instead of a token when the engine has only the hash.
DIGEST_PREFIX = "sha256:"
UNAVAILABLE = "<hook token>"  # what token_of gives outside a decision (no key at hand)
KeySource = Callable[[], "bytes | None"]


def derive(key: bytes, execution_id: str, name: str) -> str:
    mac = hmac.new(key, f"orbit-hook\x00{execution_id}\x00{name}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def sha256_hex(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def key_of(ids: Any) -> bytes | None:
    """The stack key an id source carries (None: plain random tokens, recorded in history)."""
    get = getattr(ids, "hook_key", None)
    return get() if callable(get) else None


def token_of(execution_id: str, name: str, hook: dict[str, Any], keys: KeySource | None = None) -> str:
    """The token of a hook as state holds it: recorded (older histories) or derived from the key
    of `keys` (None: no key at hand, a placeholder)."""
    if hook.get("token"):
        return str(hook["token"])
    key = keys() if keys is not None else None
    return derive(key, execution_id, name) if key else UNAVAILABLE


def tokens_view(execution_id: str, hooks: dict[str, Any], keys: KeySource | None = None) -> dict[str, Any]:
    """`hooks` as expressions (and code's `ctx.hook_token`) see it: name -> {token}."""
    return {n: {"token": token_of(execution_id, n, h, keys)} for n, h in hooks.items()}


def identity(hook: dict[str, Any]) -> str:
    """What tells one hook's token from another without the token: the recorded token (old
    histories) or `sha256:<hex>` of it. Two decisions agree on a hook when its identity is the
    same; a store indexes and retires a hook by it (`orbit.service.ports.hook_key` hashes a
    token and takes a `sha256:` reference as it is)."""
    return str(hook.get("token") or DIGEST_PREFIX + str(hook.get("token_sha256") or ""))


def matches(hook: dict[str, Any], token: str, digest: str) -> bool:
    """A resume for (`token` or just its `digest`) is for this hook."""
    if hook.get("token"):
        return hook["token"] == token if token else sha256_hex(str(hook["token"])) == digest
    return bool(digest) and hook.get("token_sha256") == digest


__all__ = ("DIGEST_PREFIX", "UNAVAILABLE", "derive", "sha256_hex", "key_of",
           "token_of",
           "tokens_view", "identity", "matches")
