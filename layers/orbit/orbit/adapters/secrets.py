"""The one adapter for AWS Secrets Manager: the stack's hook-token key.

template.yaml creates the secret (`HookSecret`, a generated 64-character string) and hands its
ARN to the engine's functions as ORBIT_HOOK_SECRET_ARN. The key is read once per process (a
Lambda cold start), and only when a decision first needs it: a hook created, or an expression
reading `hooks.NAME.token` (orbit.core.history.hook_tokens).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from orbit.errors import OrbitError

MIN_KEY_CHARS = 32


class SecretsManagerHookKey:
    """A callable giving the key's bytes, read once through `client()` (a Secrets Manager client)."""

    def __init__(self, client: Callable[[], Any], secret_id: str) -> None:
        self._client, self.secret_id = client, secret_id
        self._key: bytes | None = None
        self._lock = threading.Lock()

    def __call__(self) -> bytes:
        with self._lock:
            if self._key is None:
                value = self._client().get_secret_value(SecretId=self.secret_id).get("SecretString") or ""
                if len(value) < MIN_KEY_CHARS:
                    raise OrbitError(f"hook secret {self.secret_id}: needs at least {MIN_KEY_CHARS} "
                                     f"characters, has {len(value)}")
                self._key = value.encode()
            return self._key


class SecretsManagerWebhookSecrets:
    """Webhook triggers' signing secrets (service/webhooks.py), by name or ARN, each read once and
    kept `ttl_s` seconds so a rotated secret is picked up without a redeploy."""

    def __init__(self, client: Callable[[], Any], ttl_s: float = 300.0,
                 clock: Callable[[], float] | None = None) -> None:
        import time

        self._client, self.ttl_s = client, ttl_s
        self._clock = clock or time.monotonic
        self._cache: dict[str, tuple[float, bytes]] = {}
        self._lock = threading.Lock()

    def get(self, secret_id: str) -> bytes:
        with self._lock:
            hit = self._cache.get(secret_id)
            if hit is not None and self._clock() - hit[0] < self.ttl_s:
                return hit[1]
        got = self._client().get_secret_value(SecretId=secret_id)
        value = got.get("SecretString")
        raw = value.encode() if isinstance(value, str) else bytes(got.get("SecretBinary") or b"")
        if not raw:
            raise OrbitError(f"webhook secret {secret_id}: empty")
        with self._lock:
            self._cache[secret_id] = (self._clock(), raw)
        return raw
