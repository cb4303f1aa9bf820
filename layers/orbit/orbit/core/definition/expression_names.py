"""Names an expression calls that exist nowhere: checked when a definition is validated."""

from __future__ import annotations

from typing import Any

import jsonata

from orbit.errors import ExpressionError

from .expression_budget import ast_symbols
from .expressions import _compile


def unknown_functions(text: str) -> list[str]:
    """Names called as functions (``$nme(x)``, ``x ~> $nme``) that are neither JSONata's, the
    engine's (``$now``, ``$millis``, ``$random``, ``$shuffle``) nor bound in the expression
    (``$f := function...``, a lambda's parameter): a typo that would fail every evaluation."""
    try:
        ast = _compile(text).ast
    except ExpressionError:
        return []
    called: list[str] = []
    bound: set[str] = set()
    for current in ast_symbols(ast):
        target: Any = None
        if current.type in ("function", "partial"):
            target = current.procedure
        elif current.type == "apply":
            target = current.rhs
        elif current.type == "bind" and getattr(current.lhs, "type", None) == "variable":
            bound.add(current.lhs.value)
        elif current.type == "lambda":
            bound.update(a.value for a in current.arguments or [] if getattr(a, "type", None) == "variable")
        if getattr(target, "type", None) == "variable" and isinstance(target.value, str) and target.value:
            called.append(target.value)
    known = set(jsonata.Jsonata.static_frame.bindings) | bound
    return sorted({name for name in called if name not in known})
