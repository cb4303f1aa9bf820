"""Registration checks of triggers that ask the world outside (docs/triggers.md, "SQS"): run by
`service.registration_checks.check_registration` before a definition is stored, on every registration path
(the API's `POST /definitions`, the definitions custom resource, `LocalStack.register`)."""

from __future__ import annotations

from typing import Any

from orbit.core.definition.triggers import triggers_of
from orbit.errors import ValidationError


def check_trigger_sources(engine: Any, definition: Any) -> None:
    """Before a definition is stored: every queue its sqs triggers name can be read by this stack
    (`engine.trigger_sources.queue_problem`; no adapter: nothing to ask). A ValidationError naming
    the trigger and its field otherwise, so nothing is registered and nothing is mapped."""
    check = getattr(getattr(engine, "trigger_sources", None), "queue_problem", None)
    if check is None:
        return
    for name, trig in triggers_of(definition).items():
        if trig.kind == "sqs":
            arn = str(trig.config["queue_arn"])
            problem = check(arn)
            if problem:
                raise ValidationError(
                    f"trigger {name!r} names queue {arn}: {problem}; nothing was registered",
                    f"triggers.{name}.sqs.queue_arn",
                )
