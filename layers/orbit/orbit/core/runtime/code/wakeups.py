"""Which waiting branches of a group to resume after a new state, at the cost of what changed.

A branch waits on the units it looked at since its last turn. Only three things can let it go on:
one of those units ended (it left `state.active`), a unit it asked for appeared already ended (a
timer due at once) or reset (a redrive), or the workflow's abort changed. A branch that waits on
no live unit (it asked for a hook, or cancelled a scope) is resumed at the next state. The units
that ended are read from `state.left` (the units that left `active`, in order) past where it stood
when the group last handed out its commands: a decision costs a Python step per unit that ended or
appeared, whatever the width (docs/decisions/width2-warm-decision.md). A state that is another
object than the one the group saw (loaded again after a lost commit, and found to extend it)
resumes every waiting branch: each looks at its units again and waits on (rare, and correct).
"""

from __future__ import annotations

from typing import Any

from orbit.core.history.state import PENDING


class Wakeups:
    def __init__(self) -> None:
        self.waiters: dict[str, list[Any]] = {}  # live unit -> branches waiting on it
        self.fresh: dict[str, list[Any]] = {}  # unit asked for, not in the state yet -> branches
        self.always: list[Any] = []  # branches to resume at the next state, whatever changed
        self.left: list[str] | None = None  # state.left when the group last handed out commands ...
        self.seen = 0  # ... and its length then
        self.abort: str | None = None

    def block(self, b: Any, state: Any, poll: bool = False) -> None:
        """Branch `b` waits: register it on the units it looked at that may still change."""
        waiting = False
        for key in dict.fromkeys(b.replay.watch):
            u = state.units.get(key)
            if u is None:
                self.fresh.setdefault(key, []).append(b)
                waiting = True
            elif not u.terminal:
                self.waiters.setdefault(key, []).append(b)
                waiting = True
        if poll or not waiting:
            self.always.append(b)

    def snapshot(self, state: Any, abort: str | None) -> None:
        """The group hands out its commands and waits for the next state."""
        self.left, self.seen = state.left, len(state.left)
        self.abort = abort

    def due(self, state: Any, abort: str | None, branches: list[Any]) -> list[Any]:
        """The waiting branches to resume now, in index order."""
        if self.left is None:
            return []  # no new state since the branches started
        if abort != self.abort or state.left is not self.left:
            # a cancel or timeout: every branch must see it; or another state object (reloaded):
            # every waiting branch looks again
            self.waiters, self.fresh, self.always = {}, {}, []
            return [b for b in branches if not b.done]
        found = set(self.always)
        self.always = []
        ended, self.seen = state.left[self.seen:], len(state.left)
        for key in ended:
            if key not in state.active:  # left, and not back (a redrive) since
                found.update(self.waiters.pop(key, ()))
        for key in [k for k in self.fresh if k in state.units]:
            waiting = self.fresh.pop(key)
            u = state.units[key]
            if u.terminal or u.status == PENDING:
                found.update(waiting)
            else:
                self.waiters.setdefault(key, []).extend(waiting)
        return sorted((b for b in found if not b.done), key=lambda b: b.index)

    def watched(self) -> list[str]:
        """What the group waits on, for its own parent's wake-ups."""
        return [*self.waiters, *self.fresh]
