"""Reading the `orbit` command's arguments: JSON values, signals, template parameters, code files.

Every problem is a UsageError whose message names the flag or file and how to fix it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from orbit.errors import OrbitError


class UsageError(OrbitError):
    """A command-line value is wrong; the message says which and how to fix it (exit code 2)."""


def require_file(path: str, flag: str = "") -> Path:
    """`path` as a Path, or a UsageError naming it (and the flag that gave it, e.g. `--workers`)."""
    found = Path(path)
    if not found.is_file():
        hint = " (it is a directory)" if found.is_dir() else ""
        raise UsageError(f"{flag + ' ' if flag else ''}{path}: file not found{hint}")
    return found


def port(value: str) -> int:
    """An argparse type: a TCP port, 0 (a free one) to 65535."""
    try:
        number = int(value)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port; use 1-65535 (0 picks a free one)")
    return number


def parse_json_arg(value: str | None, flag: str, example: str | None = None) -> Any:
    """`JSON` or `@file.json` (as curl does); `example` is how the flag is written with a value."""
    if value is None:
        return None
    text = value
    if value.startswith("@"):
        path = Path(value[1:])
        if not path.is_file():
            raise UsageError(f"{flag} {value}: file {path} not found")
        text = path.read_text()
    try:
        return json.loads(text)
    except RecursionError:
        where = value if value.startswith("@") else "the value"
        raise UsageError(f"{flag}: {where} nests arrays or objects too deeply to read") from None
    except ValueError as exc:
        where = value if value.startswith("@") else "the value"
        example = example or f"{flag} '{{\"a\": 1}}'"
        raise UsageError(f"{flag}: {where} is not valid JSON ({exc}); quote it, e.g. {example}")


def parse_signal_arg(value: str) -> tuple[str, Any]:
    name, sep, payload = value.partition("=")
    if not sep or not name:
        raise UsageError(
            f"--signal {value!r}: expected NAME=JSON, e.g. --signal 'approval={{\"approved\": true}}'"
        )
    example = f"--signal '{name}={{\"approved\": true}}'"
    return name, parse_json_arg(payload, f"--signal {name}", example)


def parse_parameter_arg(values: list[str] | None) -> dict[str, str]:
    """`--parameter KEY=VALUE` (repeatable): template parameters of the local stack."""
    out: dict[str, str] = {}
    for value in values or []:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise UsageError(
                f"--parameter {value!r}: expected KEY=VALUE, e.g. --parameter HttpTaskEnabled=true"
            )
        out[key] = val
    return out


def local_parameters(values: list[str] | None, template: str | None) -> dict[str, str]:
    """`--parameter KEY=VALUE` flags of `orbit run` / `orbit dev`, checked against the template.

    Checked here, before the local stack starts, so a misspelt name or a value the
    template refuses is an error naming the flag and what it accepts, not a stack
    that quietly runs with the default (e.g. the HTTP task still off).
    """
    from orbit.local import find_template
    from orbit.local.parameters import parameter_problems

    params = parse_parameter_arg(values)
    if not params:
        return params
    problems = parameter_problems(find_template(template), params)
    if problems:
        raise UsageError("; ".join(f"--parameter {p}" for p in problems))
    return params


class UserCodeError(OrbitError):
    """A user's .py file (workers or code workflows) does not import; the message names file and line."""


def import_user_file(file: str, flag: str) -> Any:
    """Import a workers module or code-workflow file (dotted name or .py path), or raise an error
    naming the flag, the file and the line: a missing file is a UsageError (exit 2); a file that
    raises while importing (SyntaxError, ImportError, ...) is a UserCodeError (exit 1)."""
    from orbit.local import load_workers

    prefix = f"{flag} " if flag else ""
    if file.endswith(".py"):
        require_file(file, flag)
    try:
        return load_workers(file)
    except SyntaxError as exc:
        raise UserCodeError(f"{prefix}{exc.filename or file}:{exc.lineno}: SyntaxError: {exc.msg}") from None
    except OrbitError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the user's module raised while importing
        tb = exc.__traceback__
        line = None
        while tb is not None:  # the deepest frame inside the user's file
            if Path(tb.tb_frame.f_code.co_filename).resolve() == Path(file).resolve():
                line = tb.tb_lineno
            tb = tb.tb_next
        where = f"{file}:{line}" if line else file
        raise UserCodeError(f"{prefix}{where}: importing it raised {type(exc).__name__}: {exc}") from None


def load_code_workflows(file: str, flag: str = "") -> dict[str, Any]:
    """The @orbit.workflow functions of a .py file (imported once), or an error saying why not."""
    module = import_user_file(file, flag)
    found = {wf.name: wf for wf in vars(module).values() if _is_code_workflow(wf)}
    if not found:
        raise UserCodeError(f"{file}: no @orbit.workflow function in it")
    return found


def _is_code_workflow(value: Any) -> bool:
    return all(hasattr(value, a) for a in ("name", "version", "build")) and callable(
        getattr(value, "fn", None)
    )
