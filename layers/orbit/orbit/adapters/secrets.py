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
