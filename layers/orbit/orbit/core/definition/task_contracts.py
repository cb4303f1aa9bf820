"""`tasks:`: the contract of each task a definition calls, `{NAME: {input, output, description}}`.

Both are JSON Schemas, checked by the decider when an execution runs (`TaskContracts`): a step
whose evaluated input breaks `input` fails before it is dispatched, and a result that breaks
`output` fails the step instead of completing it. Either way the decision is recorded once, as
the step's StepFailed, so replay never checks again. `orbit test` and `orbit simulate` also use
them: mocks are checked against `output` and generated from it (docs/testing-definitions.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from orbit.core.definition.checks import Problems, check_keys, check_schema_doc, join, suggest, type_name
from orbit.core.history.task_error import INPUT_CONTRACT_VIOLATION, OUTPUT_CONTRACT_VIOLATION, TaskError

TASK_KEYS = ("input", "output", "description", "concurrency", "rate", "priority")  # the last 3: core/flow


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


def check_contract(name: str, body: Any, path: str, out: Problems) -> None:
    """One task's contract `{input, output, description}` (schemas valid, references local)."""
    if not isinstance(body, dict):
        out.add(path, f"must be a mapping with `input` and/or `output` schemas, not {type_name(body)}")
        return
    check_keys(body, TASK_KEYS, path, out, "a task contract")
    for key in ("input", "output"):
        if key in body:
            check_schema_doc(body[key], join(path, key), out)
    if "description" in body and not isinstance(body["description"], str):
        out.add(join(path, "description"), f"must be a string, not {type_name(body['description'])}")


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
        check_contract(str(name), body, path, out)


_CODES = MappingProxyType({"input": INPUT_CONTRACT_VIOLATION, "output": OUTPUT_CONTRACT_VIOLATION})
MAX_MESSAGE = 500  # one line in describe, the CLI and the console


class TaskContracts:
    """The `tasks:` contracts of one workflow, with each validator compiled once (on first use)
    and kept here, so a check costs the validation and nothing else. Build it with :meth:`of`,
    which gives None for a workflow without any schema: such a workflow pays nothing."""

    def __init__(self, schemas: dict[tuple[str, str], Any]) -> None:
        self._schemas = schemas  # (task, "input" | "output") -> schema
        self._compiled: dict[tuple[str, str], Any] = {}

    @classmethod
    def of(cls, tasks: Mapping[str, Any] | None) -> TaskContracts | None:
        schemas = {(str(name), side): body[side]
                   for name, body in (tasks or {}).items() if isinstance(body, dict)
                   for side in ("input", "output") if body.get(side) not in (None, True, {})}
        return cls(schemas) if schemas else None

    def declares(self, task: str | None, side: str) -> bool:
        return (task, side) in self._schemas

    def check(self, task: str | None, unit: str, side: str, value: Any) -> TaskError | None:
        """None when `value` (the `side` of `task`, run as unit `unit`) keeps the contract;
        otherwise a non-retryable INPUT_/OUTPUT_CONTRACT_VIOLATION whose one-line message names
        the step, the task, the JSON path that is wrong and what the schema expected."""
        key = (str(task), side)
        if key not in self._schemas:
            return None
        from orbit.core.definition.contracts import check_compiled, compile_schema, unusable_reason

        code = _CODES[side]
        contract = f"tasks.{task}.{side}"
        where = {"task": task, "step": unit, "contract": contract}
        if key not in self._compiled:  # compiled once, a failure too (the schema does not change)
            try:
                self._compiled[key] = compile_schema(self._schemas[key])
            except Exception as exc:  # noqa: BLE001 - a schema that slipped past validation: the step fails
                self._compiled[key] = exc
        compiled = self._compiled[key]
        if isinstance(compiled, Exception):
            why = unusable_reason(compiled, contract)
            message = f"task {task!r} at step {unit!r}: {contract} cannot be applied: {why}"
            return TaskError(code, message, retryable=False, details={**where, "errors": []})
        err = check_compiled(compiled, value, code, side)
        if err is None:
            return None
        when = "; not dispatched" if side == "input" else ""
        message = f"task {task!r} at step {unit!r}: {err.message} (contract {contract}{when})"
        message = message.replace("\r", " ").replace("\n", " ")
        if len(message) > MAX_MESSAGE:
            message = message[:MAX_MESSAGE - 3] + "..."
        details = {**where, **(err.details or {})}
        return TaskError(code, message, retryable=False, details=details)
