"""Checking a test's `expect` block before it runs: known keys, statuses, and steps that exist."""

from __future__ import annotations

from typing import Any

from orbit.core.definition.checks import Problems, check_keys, join, suggest, type_name
from orbit.core.definition.model import Definition, Step
from orbit.core.history.state import WORKFLOW_STATUSES, parse_key

EXPECT_KEYS = ("status", "output", "output_includes", "error", "steps", "compensation", "events")
STEP_EXPECT_KEYS = ("status", "attempts", "output", "output_includes", "error")
HANDLER_PREFIX = "on_signal:"
STEP_STATUSES = ("PENDING", "SCHEDULED", "DISPATCHED", "RETRY_WAIT", "WAITING", "SUCCEEDED", "FAILED",
                 "SKIPPED", "CANCELLED")


def check_expect(expect: Any, path: str, d: Definition, out: Problems) -> None:
    if not isinstance(expect, dict):
        out.add(path, f"must be a mapping ({', '.join(EXPECT_KEYS)}), not {type_name(expect)}")
        return
    check_keys(expect, EXPECT_KEYS, path, out, "expect")
    status = expect.get("status")
    if "status" in expect and status not in WORKFLOW_STATUSES:
        out.add(join(path, "status"), f"{status!r} is not a status ({', '.join(WORKFLOW_STATUSES)})")
    steps = expect.get("steps", {})
    if not isinstance(steps, dict):
        out.add(join(path, "steps"), f"must be a mapping of step names to expectations, "
                                     f"not {type_name(steps)}")
        steps = {}
    for unit, body in steps.items():
        where = join(join(path, "steps"), str(unit))
        if _unknown_step(str(unit), d, where, out):
            continue
        if not isinstance(body, dict):
            out.add(where, f"must be a mapping ({', '.join(STEP_EXPECT_KEYS)}), not {type_name(body)}")
            continue
        check_keys(body, STEP_EXPECT_KEYS, where, out, "a step expectation")
        if "status" in body and body["status"] not in STEP_STATUSES:
            out.add(join(where, "status"),
                    f"{body['status']!r} is not a step status ({', '.join(STEP_STATUSES)})")
        attempts = body.get("attempts")
        if "attempts" in body and (isinstance(attempts, bool) or not isinstance(attempts, int)
                                   or attempts < 0):
            out.add(join(where, "attempts"), f"must be a whole number >= 0, not {attempts!r}")
    comp = expect.get("compensation", [])
    if not isinstance(comp, list):
        out.add(join(path, "compensation"), f"must be a list of step names, not {type_name(comp)}")
        comp = []
    for i, unit in enumerate(comp):
        where = f"{join(path, 'compensation')}[{i}]"
        if _unknown_step(str(unit), d, where, out):
            continue
        step = step_of(d, str(unit))
        if step is not None and step.compensate is None:
            out.add(where, f"step {unit!r} has no `compensate`, so it is never compensated")
    events = expect.get("events", [])
    if not isinstance(events, list) or not all(isinstance(e, (str, dict)) for e in events):
        out.add(join(path, "events"), "must be a list of event types (or partial events such as "
                                      "{type: StepFailed, step: charge}), a subsequence of the history")


def step_of(d: Definition, unit: str) -> Step | None:
    """The step a unit key names: `step`, `step[i]`, `compensate:...`, or a handler's
    `on_signal:NAME@SEQ:STEP` (an instance itself, `on_signal:NAME@SEQ`, has no step)."""
    base = parse_key(unit)[1]
    if not base.startswith(HANDLER_PREFIX):
        return d.steps.get(base)
    name, _, rest = base[len(HANDLER_PREFIX):].partition("@")
    seq, _, step = rest.partition(":")
    handler = d.handlers.get(name)
    return handler.steps.get(step) if handler is not None and seq.isdigit() else None


def _is_instance(d: Definition, unit: str) -> bool:
    comp, base, index = parse_key(unit)
    name, _, seq = base[len(HANDLER_PREFIX):].partition("@")
    return base.startswith(HANDLER_PREFIX) and not comp and index is None and name in d.handlers \
        and seq.isdigit()


def _unknown_step(unit: str, d: Definition, where: str, out: Problems) -> bool:
    comp = parse_key(unit)[0]
    step = step_of(d, unit)
    if (step is not None and not (comp and step.compensate is None)) or _is_instance(d, unit):
        return False
    base = parse_key(unit)[1]
    names = list(d.steps) + [f"{HANDLER_PREFIX}{n}@SEQ:{s}" for n, h in d.handlers.items() for s in h.steps]
    out.add(where, f"no step named {base!r} in {d.name}{suggest(base, names)} (steps: {', '.join(names)})")
    return True
