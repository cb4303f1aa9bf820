"""Task contracts at run time: where the decider checks a step against `tasks.NAME.input/output`.

The check is made once, by the decision that would otherwise record the step's dispatch or its
success, and its outcome is what that decision records: a StepFailed (INPUT_CONTRACT_VIOLATION)
instead of a StepScheduled, or a StepAttemptFailed + StepFailed (OUTPUT_CONTRACT_VIOLATION)
instead of a StepSucceeded. Replaying a history folds those events and never checks again, so a
history recorded before contracts were checked (or under another schema) replays as it was.
A workflow without contracts has `task_contracts` None and pays one attribute read.
"""

from __future__ import annotations

from typing import Any

from orbit.core.decider.context import Ctx
from orbit.core.history.events import TaskError


def violation(ctx: Ctx, task: str | None, unit: str, side: str, value: Any) -> TaskError | None:
    """The contract error of `value` as `side` ("input" or "output") of `task` run as `unit`."""
    contracts = getattr(ctx.workflow, "task_contracts", None)
    if contracts is None:
        return None
    error: TaskError | None = contracts.check(task, unit, side, value)
    return error
