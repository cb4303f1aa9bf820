"""`tasks:`: the contract of each task a definition calls, `{NAME: {input, output, description}}`.

Both are JSON Schemas. `orbit test` refuses a mock output that breaks `output` and fails a test
whose workflow sends a task an input that breaks `input`; `orbit simulate` generates task outputs
from `output` and reports any input that breaks `input` (docs/testing-definitions.md).
"""

from __future__ import annotations

from typing import Any

from orbit.core.definition.checks import Problems, check_keys, check_schema_doc, join, suggest, type_name

TASK_KEYS = ("input", "output", "description")


def called_tasks(steps: Any, handlers: Any = None) -> dict[str, str]:
    """Task name -> the first step (or `STEP.compensate`) that calls it, from a raw `steps` mapping
    and the raw `on_signal` handlers' steps."""
    out: dict[str, str] = {}
    groups: list[tuple[Any, str]] = [(steps, "")]
    for sig, handler in (handlers.items() if isinstance(handlers, dict) else ()):
        if isinstance(handler, dict):
            groups.append((handler.get("steps"), f"on_signal.{sig}.steps."))
    for group, prefix in groups:
        for name, body in (group.items() if isinstance(group, dict) else ()):
            if not isinstance(body, dict):
                continue
            where = f"{prefix}{name}"
            for part, at in ((body, where), (body.get("compensate"), f"{where}.compensate")):
                if isinstance(part, dict) and isinstance(part.get("task"), str):
                    out.setdefault(part["task"], at)
    return out


def check_tasks(document: dict[str, Any], out: Problems) -> None:
    if "tasks" not in document:
        return
    tasks = document["tasks"]
    if not isinstance(tasks, dict):
        out.add("tasks", "must be a mapping of task names to {input, output} schemas, "
                         f"not {type_name(tasks)}")
        return
    called = called_tasks(document.get("steps"), document.get("on_signal"))
    for name, body in tasks.items():
        path = join("tasks", str(name))
        if name not in called:
            listed = ", ".join(sorted(called)) or "none"
            out.add(path, f"no step calls task {name!r}{suggest(str(name), called)} (tasks called: {listed})")
        if not isinstance(body, dict):
            out.add(path, f"must be a mapping with `input` and/or `output` schemas, not {type_name(body)}")
            continue
        check_keys(body, TASK_KEYS, path, out, "a task contract")
        for key in ("input", "output"):
            if key in body:
                check_schema_doc(body[key], join(path, key), out)
        if "description" in body and not isinstance(body["description"], str):
            out.add(join(path, "description"), f"must be a string, not {type_name(body['description'])}")
