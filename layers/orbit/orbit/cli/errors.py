"""How the `orbit` command reports a failure: one line on stderr, an exit code, no traceback.

Exit code 2 for bad usage (UsageError), 1 for anything else. With --json, stdout
still gets exactly one JSON document: `{"error": {code, message}}`. The traceback
is printed only with --verbose.
"""

from __future__ import annotations

import json
import sys
import traceback

from orbit.cli.args import UsageError
from orbit.errors import OrbitError, ValidationError


def report(exc: BaseException, command: str, verbose: bool, json_mode: bool) -> int:
    """Print `exc` for a person (stderr) and, with --json, for a script (stdout); return the exit code."""
    code, lines, exit_code = _describe(exc, command, verbose)
    if verbose and not isinstance(exc, UsageError):
        traceback.print_exception(exc)
    for line in lines:
        print(line, file=sys.stderr)
    if json_mode:
        message = " ".join(line.strip() for line in lines)
        print(json.dumps({"error": {"code": code, "message": message}}, indent=2))
    return exit_code


def _describe(exc: BaseException, command: str, verbose: bool) -> tuple[str, list[str], int]:
    where = f"orbit {command}"
    if isinstance(exc, UsageError):
        return "USAGE_ERROR", [f"{where}: {exc}"], 2
    if isinstance(exc, ValidationError):
        # one problem per line, each with its path (and file, when the error knows it)
        source = getattr(exc, "source", None)
        prefix = f"{source}: " if source else ""
        lines = [f"{where}: {len(exc.problems)} problem(s):"]
        return "VALIDATION_ERROR", lines + [f"  {prefix}{p}" for p in exc.problems], 1
    if isinstance(exc, OrbitError):
        body = getattr(exc, "body", None)  # an API error answer carries the API's own code
        err = body.get("error") if isinstance(body, dict) else None
        code = str(err.get("code")) if isinstance(err, dict) and err.get("code") else type(exc).__name__
        return code, [f"{where}: {exc}"], 1
    detail = " ".join(str(exc).split()) or "(no message)"
    hint = "" if verbose else "; run again with --verbose to see where"
    return "UNEXPECTED_ERROR", [f"{where}: unexpected {type(exc).__name__}: {detail}{hint}"], 1
