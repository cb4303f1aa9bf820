"""`ctx.patched` / `ctx.deprecate_patch`: branching code that executions already run.

A marker (`PatchMarked`, no position of its own) is recorded where a run reaches the patch on
code that has it. Replaying, the marker means the new path; no marker where history already
went past that point (it has calls at later positions) means the old path. At the frontier of
history (nothing recorded after this point) the run is new enough to take the new path.
"""

from __future__ import annotations

from typing import Any

from orbit.core.runtime import commands as C
from orbit.core.runtime.code.compare import describe_call as _describe
from orbit.core.runtime.code.compare import recorded_call as _recorded
from orbit.core.runtime.code.errors import non_determinism


def patched(replay: Any, change_id: str, deprecated: bool = False) -> bool:
    """True for the new path (marking it the first time), False for a run that went past this point
    on the old code; with `deprecated` such a run diverges instead (the old path is gone)."""
    if change_id in replay.state.patches or change_id in replay.marked:
        return True
    later = [p for p in replay.index if p > replay.position]
    if later:
        if deprecated:
            p = min(later)
            key = replay.index[p]
            u = replay.state.units.get(key)
            recorded = _recorded(key, u) if u else _describe("unit", key)
            raise non_determinism(p, recorded, _describe("deprecate_patch", f"patch({change_id})"),
                                  replay.execution_id)
        return False
    replay.marked.add(change_id)
    replay.emitted_patches.append(change_id)
    replay.outbox.append(C.MarkPatch(change_id, replay.position))
    return True
