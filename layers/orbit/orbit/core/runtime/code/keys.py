"""Unit keys of code workflows, nested ones included.

A durable call at top level is `<position>.<label>` (`3.payments.charge`). A group of
branches (`ctx.parallel`/`ctx.map` over callables, `ctx.race`, `ctx.children`,
`ctx.scope`, `ctx.wait_for_condition`) is itself a unit, `<position>.<group>()`, and the
calls of its branch `b` are keyed under it: `<position>.<group>()/<b>/<position in the
branch>.<label>`. Nesting repeats: `2.parallel()/0/1.map()/3/1.sleep()` is the first call
of element 3 of a map made by branch 0 of the parallel at position 2.

`<b>` is the branch index for parallel and map, its name for a race (an identifier).
Only our own group labels open a level, so a key recorded before groups existed reads
exactly as it did (its prefix is `""`).
"""

from __future__ import annotations

from collections.abc import Iterable

from orbit.core.history.nesting import GROUPS, parent_of, split
from orbit.core.history.state import parse_key

__all__ = ("GROUPS", "branch_prefix", "build_index", "group_key", "parent_of", "position_of", "split")


def group_key(prefix: str, position: int, group: str) -> str:
    return f"{prefix}{position}.{group}()"


def branch_prefix(group: str, branch: str | int) -> str:
    return f"{group}/{branch}/"


def position_of(local: str) -> int | None:
    """The durable-call position of a key inside its branch (None for other units)."""
    head, dot, _ = local.partition(".")
    return int(head) if dot and head.isdigit() else None


def build_index(keys: Iterable[str]) -> dict[str, dict[int, str]]:
    """prefix -> {position -> recorded unit key} (the base key for map elements); the first key
    recorded at a position wins, as it always did at top level."""
    out: dict[str, dict[int, str]] = {}
    for key in keys:
        prefix, local = split(key)
        pos = position_of(local)
        if pos is not None:
            out.setdefault(prefix, {}).setdefault(pos, prefix + parse_key(local)[1])
    return out
