"""What `orbit run` checks before it starts an execution, so a mistake costs no run.

Each check raises a UsageError (exit code 2) that names what is wrong and how
to fix it: a `--signal` the definition would refuse, a task that no worker
serves (the execution would wait in its queue forever).
"""

from __future__ import annotations

from typing import Any

from orbit.cli.args import UsageError


def definitions_to_run(file: str, register: list[str]) -> list[Any]:
    """The parsed definitions of FILE (unless it is a .py file of code workflows) and of --register."""
    from orbit.cli.args import require_file
    from orbit.core.definition import load_definition

    out = []
    for path in register:
        require_file(path, "--register")
    for path in [*([] if file.endswith(".py") else [file]), *register]:
        out.append(load_definition(path))  # a DefinitionError lists every problem with its path
    return out


def signal_names(definition: Any) -> list[str]:
    """The signals a definition accepts: declared, named by a `wait_for` step or by `on_signal`."""
    return list(definition.signal_names())


def check_signals(definition: Any, wanted: list[str]) -> None:
    known = signal_names(definition)
    for name in wanted:
        if name not in known:
            accepts = f"it accepts: {', '.join(known)}" if known else "it waits for no signal"
            raise UsageError(f"--signal {name}: {definition.name} has no signal named {name!r}; {accepts}")


def tasks_needed(definitions: list[Any]) -> dict[str, str]:
    """Task name -> the first place that needs it (`workflow.steps.step`, or its compensate)."""
    needed: dict[str, str] = {}
    for d in definitions:
        for step in d.steps.values():
            for body, where in ((step, step.name), (step.compensate, f"{step.name}.compensate")):
                if body is not None and body.kind == "task" and body.task:
                    needed.setdefault(body.task, f"{d.name}: steps.{where}")
    return needed


def check_tasks_served(definitions: list[Any]) -> None:
    """Every task the definitions name is registered with @orbit.worker.task in this process
    (the workers passed with --workers, and the template's own worker functions)."""
    from orbit.worker.tasks import registered_tasks

    served = registered_tasks()
    missing = {task: where for task, where in tasks_needed(definitions).items() if task not in served}
    if missing:
        listed = "; ".join(f"{task} ({where})" for task, where in sorted(missing.items()))
        raise UsageError(
            f"no worker serves {listed}; pass --workers FILE.py (or a module) whose "
            f"@task({next(iter(sorted(missing)))!r}) function serves it"
        )
