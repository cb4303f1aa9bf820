"""`ctx.parallel`, `ctx.map` and `ctx.race` over branch functions (see docs/branches.md).

Thin: they check what the caller gave, name the branches and hand them to the group
(`code/group.py`); the completion policy and the recorded outcome are `code/branch_policy.py`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from typing import Any

from orbit.core.runtime.code.branch_policy import Policy, decoded
from orbit.core.runtime.code.group import Body, run_group
from orbit.core.runtime.code.specs import Step, as_json, as_step

_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")


def as_branch(branch: Any, what: str) -> Callable[..., Any]:
    """A branch function; a Step spec or `(task, input)` tuple becomes a branch running that step."""
    if callable(branch) and not isinstance(branch, Step):
        return branch  # type: ignore[no-any-return]
    try:
        spec = as_step(branch)
    except TypeError:
        raise TypeError(f"{what} must be a function of ctx, an orbit.Step or a (task, input) tuple, "
                        f"got {branch!r}") from None
    return lambda ctx: ctx._replay.step(spec)


def make_ctx(ctx: Any) -> Callable[[Any], Any]:
    return lambda replay: type(ctx)(replay, ctx.workflow)


def parallel(ctx: Any, branches: tuple[Any, ...], return_exceptions: bool = False,
             **policy: Any) -> list[Any]:
    fns = [as_branch(b, f"parallel branch {i}") for i, b in enumerate(branches)]
    names = [str(i) for i in range(len(fns))]
    bodies: list[Body] = [(fn, ()) for fn in fns]
    out = run_group(ctx._replay, make_ctx(ctx), "parallel", names, names, bodies,
                    Policy.of(len(fns), **policy))
    return decoded("parallel", names, out, return_exceptions)


def map_branches(ctx: Any, items: Iterable[Any], fn: Any, concurrency: int | None = None,
                 return_exceptions: bool = False, **policy: Any) -> list[Any]:
    if not callable(fn):
        raise TypeError(f"map needs a function fn(ctx, item) or fn(ctx, item, index), got {fn!r}")
    if isinstance(items, (str, bytes, dict)) or not isinstance(items, Iterable):
        raise TypeError(f"map items must be a list (or other sequence), got {type(items).__name__}")
    if concurrency is not None and (not isinstance(concurrency, int) or isinstance(concurrency, bool)
                                    or concurrency < 1):
        raise TypeError(f"map concurrency must be a positive int, got {concurrency!r}")
    record = as_json(list(items), "the items of map")
    with_index = _arity(fn) >= 3
    bodies: list[Body] = [(fn, (item, i) if with_index else (item,)) for i, item in enumerate(record)]
    names = [str(i) for i in range(len(record))]
    out = run_group(ctx._replay, make_ctx(ctx), "map", names, record, bodies,
                    Policy.of(len(record), **policy), concurrency)
    return decoded("map", names, out, return_exceptions)


def race(ctx: Any, branches: dict[str, Any]) -> tuple[str, Any]:
    if not branches:
        raise TypeError("race needs at least one branch: ctx.race(name=fn, ...)")
    for name in branches:
        if not _NAME.fullmatch(name):
            raise TypeError(f"race branch names are letters, digits and _ (at most 64), got {name!r}")
    names = list(branches)
    bodies: list[Body] = [(as_branch(b, f"race branch {n!r}"), ()) for n, b in branches.items()]
    out = run_group(ctx._replay, make_ctx(ctx), "race", names, names, bodies, Policy(first=True))
    winner = str(out["winner"])
    return winner, out["results"][names.index(winner)]


def children(ctx: Any, specs: Any, return_exceptions: bool = False, **policy: Any) -> list[Any]:
    if isinstance(specs, (str, bytes, dict)) or not isinstance(specs, Iterable):
        raise TypeError(f"children takes a list of (workflow, input) or dicts, got {type(specs).__name__}")
    kids = [_child_spec(s, i) for i, s in enumerate(specs)]
    names = [str(i) for i in range(len(kids))]
    record = [{"workflow": k["workflow"], "parent_policy": k["parent_policy"]} for k in kids]
    bodies: list[Body] = [(_start_child, (k,)) for k in kids]
    out = run_group(ctx._replay, make_ctx(ctx), "children", names, record, bodies,
                    Policy.of(len(kids), **policy))
    return decoded("children", names, out, return_exceptions)


def _start_child(ctx: Any, kid: dict[str, Any]) -> Any:
    return ctx.child(kid["workflow"], kid["input"], version=kid["version"],
                     parent_policy=kid["parent_policy"])


def _child_spec(spec: Any, i: int) -> dict[str, Any]:
    if isinstance(spec, tuple) and 1 <= len(spec) <= 2:
        spec = {"workflow": spec[0], "input": spec[1] if len(spec) == 2 else None}
    if not isinstance(spec, dict) or not isinstance(spec.get("workflow"), str) or not spec["workflow"]:
        raise TypeError(f"children[{i}] must be (workflow, input) or a dict with a workflow name, "
                        f"got {spec!r}")
    unknown = sorted(set(spec) - {"workflow", "input", "version", "parent_policy"})
    if unknown:
        raise TypeError(f"children[{i}] has unknown keys {unknown}")
    return {"workflow": spec["workflow"], "input": spec.get("input"), "version": spec.get("version"),
            "parent_policy": spec.get("parent_policy", "cancel")}


def _arity(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 3
    return len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
