"""Orbit: a durable workflow engine for Python teams on AWS.

The public names are imported lazily so that `import orbit` stays cheap (it
runs in every Lambda cold start) and the pure core never pulls in the edges.
"""

from __future__ import annotations

from typing import Any

from orbit.errors import (
    BuildMismatch,
    ConflictError,
    ExecutionExists,
    ExpressionError,
    HookAlreadyResumed,
    NonDeterminismError,
    NotFound,
    OrbitError,
    PayloadRefused,
    Problem,
    UnknownWorkflow,
    ValidationError,
)
from orbit.events import TaskError

_LAZY = {
    "LocalStack": "orbit.local",
    "Client": "orbit.client",
    "workflow": "orbit.workflow",
    "Engine": "orbit.service",
    "Simulator": "orbit.simulator",
    "load_definition": "orbit.definition",
}

__all__ = ["OrbitError", "ValidationError", "Problem", "ConflictError", "NotFound", "ExecutionExists",
           "PayloadRefused", "NonDeterminismError", "BuildMismatch", "HookAlreadyResumed",
           "UnknownWorkflow", "ExpressionError", "TaskError", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'orbit' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
