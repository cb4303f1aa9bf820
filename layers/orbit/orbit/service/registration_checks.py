"""What registering a definition checks beyond parsing it, on every registration path (the API, the
local stack, `Custom::OrbitDefinition`): its inline steps fit in the decider and name tasks this stack
serves (docs/inline-steps.md), and its sqs triggers' queues can be read (service/trigger_checks.py)."""

from __future__ import annotations

from typing import Any

from orbit.core.definition.inline import inline_timeout_problems, unserved_inline_problems
from orbit.errors import ValidationError
from orbit.service.trigger_checks import check_trigger_sources


def check_registration(engine: Any, definition: Any) -> None:
    """Refuse a definition whose inline step's timeout does not fit in the decider's timeout
    (`engine.decider_timeout_ms`, from ORBIT_DECIDER_TIMEOUT_S; unknown: Lambda's 900 s, checked
    when the definition was parsed), or whose inline step names a task this stack does not serve
    (`served_inline_tasks`; one line per step, naming it and its task). Only registration checks
    this: a stored definition that is loaded again is not refused, its step fails with
    INLINE_TASK_NOT_FOUND when it runs. Last, the queues its sqs triggers name must be readable
    (service/trigger_checks.py), before anything is stored."""
    limit = getattr(engine, "decider_timeout_ms", None)
    problems = inline_timeout_problems(definition, limit) if limit else []
    served = served_inline_tasks(engine)
    if served is not None:
        problems += unserved_inline_problems(definition, served)
    if problems:
        raise ValidationError(problems)
    check_trigger_sources(engine, definition)  # an sqs trigger's queue can be read (docs/triggers.md)



def served_inline_tasks(engine: Any) -> frozenset[str] | None:
    """The tasks inline steps may name here, or None when this process cannot know them: the
    engine's own runner's (the local stack, a decider), else `engine.inline_tasks` (a deployed API
    that imports InlineTaskModules only to know their names; orbit/aws/wiring.py)."""
    runner = getattr(engine, "inline", None)
    served = getattr(getattr(runner, "tasks", None), "served", None)
    if callable(served):
        return frozenset(served())
    known = getattr(engine, "inline_tasks", None)
    if callable(known):
        known = known()
    return None if known is None else frozenset(known)
