"""A code workflow's return value that is not JSON data, reported at the user's `return` line.

The output is checked after the function has returned, so no frame of the user's code is left
to point at: without this the message named orbit's own file (`code_specs.py`). Only on that
failure, the function's source is parsed (`ast`) and its own `return` statements (not those of
nested functions) are looked at: the one whose expression builds a value of the refused type
(a set display or comprehension, `set(...)`, a bytes literal...), else the last one. Reading
the source is what `code_errors` already does for a bug's traceback.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from orbit.core.history.events import TaskError
from orbit.core.history.storable import not_storable

_BUILDS: Mapping[str, tuple[Any, ...]] = MappingProxyType({
    "set": (ast.Set, ast.SetComp, "set"), "frozenset": ("frozenset",), "bytes": ("bytes",),
    "generator": (ast.GeneratorExp,)})


def check_output(fn: Any, value: Any) -> None:
    """VALUE_NOT_STORABLE naming FILE:LINE of the `return` when `value` cannot be the workflow's output."""
    problem = not_storable(value, "output", "the workflow's output must be JSON data: ")
    if problem is None:
        return
    where = return_line(fn, type(_first_bad(value)).__name__)
    # a TaskError, not NotStorable: the runtime locates a NotStorable at the deepest frame, which
    # here is orbit's own (the user's function has returned)
    raise TaskError(problem.code, f"{problem.message}{where}", retryable=False)


def return_line(fn: Any, kind: str) -> str:
    """` at FILE:LINE` of the `return` that built a `kind` value (best effort; "" when unknown)."""
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return ""
    try:
        lines, first = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return f" at {code.co_filename}:{code.co_firstlineno}"
    body = tree.body[0] if tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) \
        else None
    if body is None:
        return f" at {code.co_filename}:{code.co_firstlineno}"
    returns = sorted((n for n in _own(body) if isinstance(n, ast.Return) and n.value is not None),
                     key=lambda n: n.lineno)
    if not returns:
        return f" at {code.co_filename}:{code.co_firstlineno}"
    builds = _BUILDS.get(kind, ())
    hit = [r for r in returns if r.value is not None and _builds(r.value, builds)] if builds else []
    node = hit[0] if hit else returns[-1]
    return f" at {code.co_filename}:{first + node.lineno - 1}"


def _own(fn: ast.AST) -> list[ast.AST]:
    """The nodes of `fn`'s body, not descending into nested functions, lambdas or classes."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _builds(expr: ast.AST, builds: tuple[Any, ...]) -> bool:
    for node in ast.walk(expr):
        for b in builds:
            if isinstance(b, type) and isinstance(node, b):
                return True
            if isinstance(b, str) and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == b:
                return True
            if b == "bytes" and isinstance(node, ast.Constant) and isinstance(node.value, bytes):
                return True
    return False


def _first_bad(value: Any, depth: int = 0) -> Any:
    """The first value inside `value` that is not JSON data (for its type's name)."""
    if depth > 100:
        return value
    if isinstance(value, dict):
        for v in value.values():
            bad = _first_bad(v, depth + 1)
            if bad is not None:
                return bad
        return None
    if isinstance(value, list):
        for v in value:
            bad = _first_bad(v, depth + 1)
            if bad is not None:
                return bad
        return None
    if value is None or isinstance(value, (str, bool, int, float)):
        return None
    return value
