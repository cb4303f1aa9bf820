"""A signal or update id names one request from the moment the API accepts it.

The history knows a signal once the decider has received it, and an update once it is recorded;
until then a second request with the same id went to the queue too, was deduplicated by its id, and
got the first one's answer whatever it carried. So the API claims the id when it accepts a request
(`claim_request`, one conditional write per request that carries an id): the same request again (a
retry) holds the claim and is sent again, which the decider deduplicates; another name or payload
is an `IdReused` (HTTP 409) naming the difference, before anything is sent.

A claim belongs to one run of the execution (`created_at_ms`): an execution id used again after
its retention does not inherit it. It expires after `CLAIM_TTL_S`, longer than any message can wait
in a queue, or after the workflow's retention when that is shorter (so it never outlives the
execution's other items); after that the history answers, as it always did for a request received.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from orbit.errors import IdReused

CLAIM_TTL_S = 14 * 86_400  # SQS's longest message retention


def digest(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def claim(engine: Any, state: Any, kind: str, ident: str, name: str, payload: Any) -> None:
    """Claim `kind:ident` for this request, or raise IdReused when another request holds it.
    A store without claims (an older one) keeps the history's answer alone."""
    claim_request = getattr(engine.store, "claim_request", None)
    if claim_request is None:
        return
    retention = getattr(engine, "_retention_ms", None)  # accepted before its end: expires before its data
    keep_s = CLAIM_TTL_S if retention is None else min(CLAIM_TTL_S, int(retention(state)) // 1000)
    held = claim_request(state.id, int(state.created_at_ms or 0), f"{kind}:{ident}", name, digest(payload),
                         engine.clock.now_ms() // 1000 + keep_s)
    if held is not None:
        raise IdReused(kind, ident, held, name)
