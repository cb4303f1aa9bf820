"""The `orbit` command.

run / dev / validate work on this machine (the local stack); start, describe,
history, signal, cancel and list talk to an Orbit HTTP API: `orbit dev`'s
(default http://127.0.0.1:8765, or $ORBIT_URL), a deployed stack's (--stack
NAME reads its ApiUrl output) or any --url.

What each command takes and runs is a table (cli/table.py; the functions in cli/commands.py and
cli/run.py); the other modules add their own commands (recovery, updates, schedule, testing, ...).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn

from orbit.cli.args import port
from orbit.cli.errors import report
from orbit.cli.schedule import add_schedule_parser
from orbit.cli.table import ADVANCE, API, LOCAL, add_api_opts
from orbit.console.cli import add_ui_parser


def _client(args: argparse.Namespace) -> Any:
    from orbit.client import Client

    return Client(url=args.url, stack=args.stack, region=args.region)


# ---------------------------------------------------------------------- parser
class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Help that shows each option's default (when it has one) and keeps the examples' line breaks."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            action.default not in (None, False, argparse.SUPPRESS)
            and "default" not in text
            and action.option_strings
        ):
            text += " (default: %(default)s)"
        return text


class _Parser(argparse.ArgumentParser):
    """A usage error is one line (what is wrong, and where to read more), exit code 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}; see `{self.prog} --help`\n")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("orbit-engine")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    from orbit.cli.batch import add_batch_parser
    from orbit.cli.definitions import COMMANDS as DEFINITIONS
    from orbit.cli.evolution import add_parsers
    from orbit.cli.recovery import add_recovery_commands
    from orbit.cli.testing import add_testing_parsers
    from orbit.cli.updates import add_update_parser

    p = _Parser(
        prog="orbit",
        description="Orbit: durable workflows on AWS, and locally.",
        epilog="Results go to stdout, progress and logs to stderr. Exit codes: 0 done, 1 the run or the "
        "request failed, 2 bad usage. Add --verbose (anywhere) to see the traceback of an unexpected "
        "error. Reference: docs/cli.md",
    )
    p.add_argument("--version", action="version", version=f"orbit {_version()}", help="print the version")
    p.add_argument("--verbose", action="store_true", help="on an unexpected error, print its traceback")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def connect(args: argparse.Namespace) -> Any:
        return _client(args)  # looked up when called (tests replace `_client`)

    # Every command, in the order `orbit --help` lists them: the table's rows (cli/table.py) and the
    # groups of commands other modules add themselves.
    for command in (*LOCAL, *API, *DEFINITIONS):
        command.add_to(sub, connect)
    add_recovery_commands(sub, add_api_opts, connect)
    add_batch_parser(sub, add_api_opts, connect)
    add_update_parser(sub, add_api_opts, connect)
    ADVANCE.add_to(sub, connect)
    add_schedule_parser(sub, add_api_opts)
    add_ui_parser(sub, port)  # the console may not import the CLI: it gets the port type
    add_testing_parsers(sub)
    add_parsers(sub, add_api_opts, connect)
    from orbit.cli.events import add_events_parser

    add_events_parser(sub, add_api_opts, connect)  # orbit events put (docs/triggers.md)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # --verbose may come anywhere (after the command too), for every command
    verbose = "--verbose" in argv or os.environ.get("ORBIT_VERBOSE") == "1"
    argv = [a for a in argv if a != "--verbose"]
    args = build_parser().parse_args(argv)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # `--workers examples.workers.orders` from the repo root
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `orbit history ID | head`: the reader left, nothing more to say
        sys.stdout = open(os.devnull, "w")  # keep interpreter shutdown from flushing again
        return 141  # what a shell reports for a command killed by SIGPIPE
    except Exception as exc:  # noqa: BLE001 - the CLI never shows a traceback unless asked to
        return report(exc, args.command, verbose, bool(getattr(args, "json", False)))


if __name__ == "__main__":
    sys.exit(main())
