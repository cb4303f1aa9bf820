"""Template parameters given to the local stack, checked against the template's `Parameters`.

CloudFormation refuses a deploy whose parameter is unknown or breaks its constraints;
the local stack would silently ignore a misspelt name (`HttpTaskEnable=true` leaves the
HTTP task off) and pass a bad value through, so both are refused here, before moto starts,
naming the parameter and what it accepts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .cfn import TemplateError, load_template


class ParameterError(TemplateError):
    """A template parameter given to the local stack is unknown or has a value it refuses."""


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _value_problem(spec: dict[str, Any], value: str) -> str | None:
    """What is wrong with `value` for a parameter declared as `spec`, or None (CloudFormation's checks)."""
    allowed = spec.get("AllowedValues")
    if allowed is not None and value not in [str(a) for a in allowed]:
        return "allowed values: " + ", ".join(str(a) for a in allowed)
    if spec.get("Type") == "Number":
        num = _number(value)
        if num is None:
            return "expected a number"
        low, high = spec.get("MinValue"), spec.get("MaxValue")
        if low is not None and num < float(low) or high is not None and num > float(high):
            lowest, highest = low if low is not None else "-inf", high if high is not None else "inf"
            return f"expected a number from {lowest} to {highest}"
    pattern = spec.get("AllowedPattern")
    if pattern is not None and not re.fullmatch(str(pattern), value):
        return str(spec.get("ConstraintDescription") or f"expected a value matching {pattern}")
    low, high = spec.get("MinLength"), spec.get("MaxLength")
    if low is not None and len(value) < int(low) or high is not None and len(value) > int(high):
        return f"expected {low or 0} to {high if high is not None else 'any number of'} characters"
    return None


def parameter_problems(template: str | Path, values: dict[str, str]) -> list[str]:
    """One line per given parameter the template does not declare or whose value it refuses.

    Each line reads `NAME=VALUE: what is wrong; what it takes`, so a caller can prefix its flag.
    """
    declared: dict[str, Any] = load_template(template).get("Parameters") or {}
    problems: list[str] = []
    for name, value in values.items():
        spec = declared.get(name)
        if spec is None:
            known = ", ".join(sorted(declared)) or "none"
            problems.append(
                f"{name}={value}: {Path(template).name} has no parameter {name!r}; it has: {known}"
            )
            continue
        wrong = _value_problem(spec or {}, value)
        if wrong is not None:
            problems.append(f"{name}={value}: not accepted by {name}; {wrong}")
    return problems


def check_parameters(template: str | Path, values: dict[str, str]) -> None:
    """Raise a ParameterError listing every problem of `values` (see `parameter_problems`)."""
    problems = parameter_problems(template, values)
    if problems:
        raise ParameterError("template parameter " + "; ".join(problems))
