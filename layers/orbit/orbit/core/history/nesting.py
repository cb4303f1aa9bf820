"""Nested unit keys of code workflows: which group a branch's unit belongs to.

A group of branches is a unit `<position>.<group>()`; the calls of its branch `b` are keyed
`<position>.<group>()/<b>/<position in the branch>.<label>`, nesting as deep as groups do
(docs/decisions/0003-code-workflows-by-replay.md). Only these group labels open a level, so keys recorded
before groups existed keep their meaning.
"""

from __future__ import annotations

import re

GROUPS = ("parallel", "map", "race", "children", "scope", "shield", "condition")
_LEVEL = re.compile(r"\d+\.(?:" + "|".join(GROUPS) + r")\(\)/[A-Za-z0-9_]+/")


def split(key: str) -> tuple[str, str]:
    """`key` -> (prefix of the branch it belongs to, its key inside that branch)."""
    if "/" not in key:
        return "", key
    end = 0
    while True:
        m = _LEVEL.match(key, end)
        if m is None:
            return key[:end], key[end:]
        end = m.end()


def parent_of(key: str) -> str | None:
    """The group unit a nested key belongs to (None at top level)."""
    prefix, _ = split(key)
    if not prefix:
        return None
    return prefix[:-1].rsplit("/", 1)[0]


def shielded(key: str) -> bool:
    """Is the unit inside a shielded scope (`<position>.shield()` or under one)? A workflow's
    cancel leaves such units running; the code's clean-up waits for them."""
    return ".shield()" in key and any(part.endswith(".shield()") and part.split(".", 1)[0].isdigit()
                                      for part in key.split("/"))


ABANDON = ", abandon)"  # the label of a child the parent leaves running: `child(<workflow>, abandon)`


def abandoned(key: str) -> bool:
    """Is the unit a child started with `parent_policy="abandon"`? Cancelling it (the parent was
    cancelled, or stopped waiting) then leaves the child execution running."""
    local = split(key)[1]
    return local.endswith(ABANDON) and ".child(" in local
