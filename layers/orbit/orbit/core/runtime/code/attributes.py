"""`ctx.set_attributes({...})`: search attributes from a code workflow.

The values are checked at the call (a bad one raises ValueError in the workflow code, naming the
key), merged with what the replay already set, and go out with the next stop as one
`SetAttributes` command. One per stop, merged: a cold replay that passes several calls sends
only where they ended, which the engine finds unchanged and records nothing for.
"""

from __future__ import annotations

from typing import Any

from orbit.core.history.attributes import attributes_problem, normal
from orbit.core.runtime import commands as C


def set_attributes(replay: Any, values: Any) -> None:
    pending = next((c for c in replay.outbox if isinstance(c, C.SetAttributes)), None)
    merged_before = {**replay.state.attributes, **(pending.values if pending else {})}
    problem = attributes_problem(values, merged_before)
    if problem is not None:
        raise ValueError(f"set_attributes: {problem}")
    fresh = {k: normal(v) for k, v in values.items()}
    # what this instance has sent: a cached instance is valid only while the state holds it
    replay.attributes_sent = {**getattr(replay, "attributes_sent", {}), **fresh}
    if pending is None:
        replay.outbox.append(C.SetAttributes(fresh))
    else:
        replay.outbox[replay.outbox.index(pending)] = C.SetAttributes({**pending.values, **fresh})


def still_recorded(replay: Any, state: Any) -> bool:
    """Does `state` hold every attribute this cached instance sent (a lost commit drops them)?"""
    sent = getattr(replay, "attributes_sent", None) or {}
    return all(k in state.attributes and state.attributes[k] == v for k, v in sent.items())
