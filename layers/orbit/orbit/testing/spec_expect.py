"""Checking a test's `expect` block before it runs: known keys, statuses, and steps that exist."""

from __future__ import annotations

from typing import Any

from orbit.core.definition.checks import Problems, check_keys, join, suggest, type_name
from orbit.core.definition.model import Definition
from orbit.core.history.state import WORKFLOW_STATUSES, parse_key

EXPECT_KEYS = ("status", "output", "output_includes", "error", "steps", "compensation", "events")
STEP_EXPECT_KEYS = ("status", "attempts", "output", "output_includes", "error")
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
        if d.steps[parse_key(str(unit))[1]].compensate is None:
            out.add(where, f"step {unit!r} has no `compensate`, so it is never compensated")
    events = expect.get("events", [])
    if not isinstance(events, list) or not all(isinstance(e, (str, dict)) for e in events):
        out.add(join(path, "events"), "must be a list of event types (or partial events such as "
                                      "{type: StepFailed, step: charge}), a subsequence of the history")


def _unknown_step(unit: str, d: Definition, where: str, out: Problems) -> bool:
    comp, base, _ = parse_key(unit)
    if base in d.steps and not (comp and d.steps[base].compensate is None):
        return False
    names = list(d.steps)
    out.add(where, f"no step named {base!r} in {d.name}{suggest(base, names)} (steps: {', '.join(names)})")
    return True
