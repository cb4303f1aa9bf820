"""`ctx.dispose_hook(name)`: the code is done with a hook; its token resumes nothing any more.

Recorded once (HookDisposed), like a patch marker: a replay that finds the hook disposed asks
for nothing. Disposing a hook the code never created is an error in the code.
"""

from __future__ import annotations

from typing import Any

from orbit.core.history.hook_tokens import identity
from orbit.core.runtime import commands as C


def dispose(replay: Any, name: str) -> None:
    if not isinstance(name, str) or not name:
        raise TypeError(f"dispose_hook needs a hook name, got {name!r}")
    hook = replay.state.hooks.get(name)
    if hook is None:
        raise ValueError(f"dispose_hook({name!r}): this execution has no hook {name!r} "
                         f"(create it with ctx.hook_token first)")
    replay.witness.append(("hook", name, identity(hook)))
    if not hook.get("disposed"):
        replay.outbox.append(C.DisposeHook(name))
