"""What a paused workflow instance relied on since it started: the proof a cached instance needs.

A cached instance (`code.py`) may be fed a new state only if that state extends what it saw. When
the caller hands it the very state object it saw last, advanced in place (`decide` advances the
service's working copy; the service drops that copy on any failed or lost commit), its earlier
feeds are in that object's past, and checking the last feed is enough (the cheap path of every
warm decision). Any other state object was loaded again: after a lost commit, a failed decision,
an eviction, or another decider's commits. Then everything the instance relied on in *every*
feed must be in it, in every branch: one decision feeds the instance several times (its rounds,
and the at_least_once inline steps decided into the same commit, `service/inline.py`), so a lost
commit can hold results that only an earlier feed consumed. The last feed's witness alone would
keep an instance whose branch is already past a step the history never recorded (issue 24,
finding 5).

`Seen` folds each feed's witness into one fact per unit, hook and abort (the latest wins), with the
units, hooks, patches and updates the instance asked for and the units it ended itself. Checking
it costs one lookup per fact, on reloaded states only.
"""

from __future__ import annotations

from typing import Any

from orbit.core.history.hook_tokens import identity
from orbit.core.runtime import commands as C


def unit_fact(key: str, u: Any) -> tuple[Any, ...]:
    """What consuming an ended unit depends on: its outcome and its end time (`ctx.now()`)."""
    return ("unit", key, u.status, u.output, u.error, u.finished_at_ms)


def holds(fact: tuple[Any, ...], state: Any) -> bool:
    """Does `state` record `fact` as the instance saw it?"""
    if fact[0] == "unit":
        u = state.units.get(fact[1])
        return u is not None and unit_fact(fact[1], u) == fact
    if fact[0] == "hook":
        h = state.hooks.get(fact[1])
        return h is not None and identity(h) == fact[2]
    if fact[0] == "abort":
        return bool((state.abort or {}).get("kind") == fact[1])
    return False


class Seen:
    """Everything a replay relied on before its current feed (`fold` runs as each feed begins)."""

    def __init__(self) -> None:
        self.facts: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self.units: set[str] = set()
        self.hooks: set[str] = set()
        self.patches: set[str] = set()
        self.updates: set[str] = set()
        self.ended: set[str] = set()  # units it ended itself (a group's result, a cancelled loser)
        self.disposed: set[str] = set()

    def fold(self, replay: Any) -> None:
        for fact in replay.witness:
            self.facts[fact[:1] if fact[0] == "abort" else fact[:2]] = fact
        self.units.update(replay.emitted_units)
        self.hooks.update(replay.emitted_hooks)
        self.patches.update(replay.emitted_patches)
        self.updates.update(replay.updates.emitted)

    def note(self, commands: list[C.Command]) -> None:
        """Commands handed out: the units and hooks they end must be ended in a later state."""
        for c in commands:
            if isinstance(c, (C.RecordResult, C.FailStep, C.CancelUnit)):
                self.ended.add(c.unit)
            elif isinstance(c, C.DisposeHook):
                self.disposed.add(c.hook_id)

    def held_by(self, state: Any) -> bool:
        """Does `state` hold all of it? (The current feed's own lists are checked by the caller.) If
        so, the facts point at `state`'s equal values from now on: the instance does not keep the
        state it was fed before alive."""
        units, hooks = state.units, state.hooks
        if any(k not in units for k in self.units) or any(h not in hooks for h in self.hooks):
            return False
        if any(p not in state.patches for p in self.patches):
            return False
        if any((state.updates.get(uid) or {}).get("status") != "COMPLETED" for uid in self.updates):
            return False
        if any(k in units and not units[k].terminal for k in self.ended):
            return False  # a unit it ended is live again: the commit that ended it was lost
        if any(not (hooks.get(h) or {}).get("disposed") for h in self.disposed):
            return False
        rebased: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        for key, fact in self.facts.items():
            if not holds(fact, state):
                return False
            rebased[key] = unit_fact(fact[1], units[fact[1]]) if fact[0] == "unit" else fact
        self.facts = rebased
        return True
