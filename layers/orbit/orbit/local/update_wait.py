"""`orbit dev`: an update request waits for its result without holding the pump back.

The API answers an update after its handler ran, which needs the decision queue pumped. The dev
server runs the API and the pump in one process, taking turns under one lock; so instead of
waiting inside the API call (which would hold the lock), it asks with a zero timeout, then asks
again with the same update id (which records nothing new) between pump turns, until the result
is there or the caller's timeout passes.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

PATH = re.compile(r"/executions/[^/]+/updates/[^/]+/?")


def is_update(method: str, path: str) -> bool:
    return method == "POST" and PATH.fullmatch(path) is not None


def serve_update(ask: Callable[[bytes], tuple[int, Any]], raw: bytes, pause: float = 0.05) -> tuple[int, Any]:
    """`ask(body)` runs one API call under the server's lock; returns the final answer."""
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, RecursionError):
        return ask(raw)  # the API refuses it with its own message
    if not isinstance(body, dict):
        return ask(raw)
    timeout = body.get("timeout", 10)
    status, answer = ask(json.dumps({**body, "timeout": 0}).encode())
    if status != 202 or not isinstance(timeout, (int, float)) or isinstance(timeout, bool):
        return status, answer
    deadline = time.monotonic() + min(float(timeout), 25.0)
    again = json.dumps({**body, "timeout": 0, "update_id": answer.get("update_id")}).encode()
    while status == 202 and time.monotonic() < deadline:
        time.sleep(pause)  # the pump thread takes its turn
        status, answer = ask(again)
    return status, answer
