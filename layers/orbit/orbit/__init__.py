"""Orbit: a durable workflow engine for Python teams on AWS.

The public names are imported lazily so that `import orbit` stays cheap (it
runs in every Lambda cold start) and the pure core never pulls in the edges.
"""

from __future__ import annotations

from typing import Any

from orbit.core.history.events import TaskError
from orbit.errors import (
    BuildMismatch,
    ConflictError,
    ExecutionEnded,
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
from orbit.workflow import workflow  # eager: a lazy name would be shadowed by the submodule `orbit.workflow`

# An error raised on purpose by workflow code: it fails the execution (a bug parks it instead).
ApplicationError = TaskError

_LAZY = {
    "LocalStack": "orbit.local",
    "Client": "orbit.client",
    "Step": "orbit.core.runtime.code.specs",
    "StepFailed": "orbit.core.runtime.code.errors",
    "ContractViolation": "orbit.core.runtime.code.errors",
    "Cancelled": "orbit.core.runtime.code.errors",
    "BranchesFailed": "orbit.core.runtime.code.branch_policy",
    "ConditionNotMet": "orbit.core.runtime.code.condition",
    "WorkflowTimedOut": "orbit.core.runtime.code.errors",
    "Engine": "orbit.service.engine",
    "Simulator": "orbit.testing.simulator",
    "load_definition": "orbit.core.definition",
}

__all__ = [
    "OrbitError",
    "ValidationError",
    "Problem",
    "ConflictError",
    "NotFound",
    "ExecutionExists",
    "ExecutionEnded",
    "PayloadRefused",
    "NonDeterminismError",
    "BuildMismatch",
    "HookAlreadyResumed",
    "UnknownWorkflow",
    "ExpressionError",
    "TaskError",
    "ApplicationError",
    "workflow",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'orbit' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
