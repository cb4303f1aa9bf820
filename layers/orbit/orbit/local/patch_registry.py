"""The record of every change `patches.applied()` makes to moto, botocore and werkzeug, and its undo.

A leaf module (the patching modules import it; it imports none of them): `put` and `on_undo` are
only accepted while `patches` is applying, and `restore` puts every recorded attribute back, last
first, as the very object the owner held (or deletes it again if the owner held none itself).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_MISSING = object()
replaced: list[tuple[Any, str, Any]] = []  # (owner, name, what owner.__dict__ held or _MISSING), in order
_undo: list[Callable[[], None]] = []  # other changes (a list insertion, a flag), undone last-in first-out
applying = False


def put(owner: Any, name: str, value: Any) -> None:
    """Set `owner.name = value` for as long as the patches are in (only while applying them)."""
    if not applying:
        raise RuntimeError(f"patch of {owner!r}.{name} outside orbit.local.patches.applied()")
    held = vars(owner).get(name, _MISSING)
    if not any(o is owner and n == name for o, n, _ in replaced):  # the first original is the original
        replaced.append((owner, name, held))
    setattr(owner, name, value)


def on_undo(fn: Callable[[], None]) -> None:
    """Run `fn` when the patches come out (for changes that are not an attribute, e.g. a list item)."""
    if not applying:
        raise RuntimeError("orbit.local.patches.on_undo outside applied()")
    _undo.append(fn)


def original(owner: Any, name: str) -> Any:
    """What `owner.name` was before the patches (the current value if it is not patched)."""
    for o, n, held in replaced:
        if o is owner and n == name:
            if held is _MISSING:
                return getattr(owner, name)
            return held.__get__(None, owner) if isinstance(held, (classmethod, staticmethod)) else held
    return getattr(owner, name)


def restore() -> None:
    while _undo:
        _undo.pop()()
    for owner, name, held in reversed(replaced):
        if held is _MISSING:
            if name in vars(owner):
                delattr(owner, name)
        else:
            setattr(owner, name, held)
    replaced.clear()
