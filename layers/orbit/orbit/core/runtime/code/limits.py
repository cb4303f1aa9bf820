"""How wide one code-workflow execution may grow (docs/limits.md, "Width of a code workflow").

A group fans out to at most `MAX_FOR_ITEMS` branches or elements (commands.py). Groups nest, so
the execution as a whole is bounded too: at most `MAX_LIVE_UNITS` units (steps, timers, waits,
children, groups) live at once. Each live unit is an entry in the state and, in a code workflow,
usually a branch parked on a greenlet (about 6.5 kB each, docs/decisions/width-greenlets.md); past
the limit the run fails with `TOO_MANY_UNITS`, naming the call, instead of exhausting memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orbit.core.history.events import TaskError
from orbit.core.runtime.code.errors import FailRun

MAX_LIVE_UNITS = 20_000
TOO_MANY_UNITS = "TOO_MANY_UNITS"


def check_live(root: Any, keys: Sequence[str]) -> None:
    """Refuse to ask for `keys` when the execution would hold more than MAX_LIVE_UNITS live units
    (those of the state plus those this feed already asked for). Deterministic: a function of the
    state and the code, so a replay refuses at the same call."""
    live = len(root.state.active) + len(root.emitted_units) + len(keys)
    if live > MAX_LIVE_UNITS:
        raise FailRun(TaskError(TOO_MANY_UNITS, (
            f"{keys[0]!r} of workflow {root.state.workflow!r} (execution {root.execution_id!r}) would make "
            f"{live} units live at once, more "
            f"than the limit of {MAX_LIVE_UNITS} (steps, timers, waits and children in flight, across "
            "every branch); bound the fan-out with concurrency=, or give child workflows a slice each"),
            retryable=False, details={"limit": MAX_LIVE_UNITS, "live": live, "unit": keys[0]}))
