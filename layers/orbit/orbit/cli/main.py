"""The `orbit` command.

run / dev / validate work on this machine (the local stack); start, describe,
history, signal, cancel and list talk to an Orbit HTTP API: `orbit dev`'s
(default http://127.0.0.1:8765, or $ORBIT_URL), a deployed stack's (--stack
NAME reads its ApiUrl output) or any --url.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, NoReturn

from orbit.cli.args import (
    UsageError,
    UserCodeError,
    load_code_workflows,
    parse_json_arg,
    require_file,
)
from orbit.cli.errors import report
from orbit.cli.run import cmd_dev, cmd_run
from orbit.cli.schedule import add_schedule_parser
from orbit.console.cli import add_ui_parser
from orbit.core.history.state import WORKFLOW_STATUSES
from orbit.errors import ValidationError
from orbit.local.text import cut, utc, value_lines, width
from orbit.service.operations import HISTORY_PAGE

TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT")


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


# ---------------------------------------------------------------------- local commands
def cmd_validate(args: argparse.Namespace) -> int:
    from orbit.core.definition import validate_file

    path = require_file(args.file)
    if path.suffix == ".py":  # code workflows: valid when the file imports and defines some
        try:
            found = load_code_workflows(str(path))
        except UserCodeError as exc:
            if not args.json:
                raise
            _print_json({"file": str(path), "valid": False, "problems": [str(exc)]})
            return 1
        names = [f"{n} v{wf.version}" for n, wf in sorted(found.items())]
        if args.json:
            _print_json({"file": str(path), "valid": True, "problems": [], "workflows": names})
        else:
            print(f"{path}: valid ({', '.join(names)})")
        return 0
    problems = validate_file(path)
    if args.json:
        _print_json({"file": str(path), "valid": not problems, "problems": problems})
    elif problems:
        for p in problems:  # each already reads "FILE: path.in.file: what is wrong"
            print(p, file=sys.stderr)
        print(
            f"{path}: {len(problems)} problem(s); fix them and run `orbit validate {path}` again",
            file=sys.stderr,
        )
    else:
        print(f"{path}: valid")
    return 1 if problems else 0


# ---------------------------------------------------------------------- API commands
def _client(args: argparse.Namespace) -> Any:
    from orbit.client import Client

    return Client(url=args.url, stack=args.stack, region=args.region)


def cmd_start(args: argparse.Namespace) -> int:
    from orbit.cli.watch import ended_line, wait_for_end

    inp = parse_json_arg(args.input, "--input") if args.input else {}
    client = _client(args)
    res = client.start(args.name, inp, id=args.id, version=args.version)
    eid = res.get("id") if isinstance(res, dict) else res
    # a start decides at once: an input that broke the contract has already failed the execution
    desc = wait_for_end(client, eid, args.timeout) if args.wait else client.describe(eid)
    if args.json:
        _print_json(desc if args.wait else res)
    else:
        print(eid)
    if desc.get("status") in TERMINAL and desc.get("status") != "COMPLETED":
        print(f"orbit start: {ended_line(desc)}", file=sys.stderr)
        return 1
    if args.wait and not args.json:
        for line in value_lines("output", desc.get("output"), width()):
            print(line)
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    paging = {k: v for k, v in (("steps_after", args.steps_after), ("steps_limit", args.steps_limit)) if v}
    desc = _client(args).describe(args.id, **paging)
    if args.json:
        _print_json(desc)
        return 0
    columns = width()
    print(f"{desc['id']}  {desc['workflow']} v{desc['version']}  {desc['status']}")
    print(f"created: {utc(desc.get('created_at_ms'))}   ended: {utc(desc.get('finished_at_ms'))}")
    for unit, st in (desc.get("steps") or {}).items():
        err = f"  {st['error'].get('code')}" if st.get("error") else ""
        print(cut(f"  {unit:<24} {st['status']:<12} attempt {st.get('attempt') or '-'}{err}", columns))
    if desc.get("parked"):  # RUNNING but not deciding until someone acts: say why
        print(cut(f"parked: {json.dumps(desc['parked'])}", columns))
    if desc.get("progress") is not None:
        print(cut(f"progress: {json.dumps(desc['progress'])}", columns))
    if desc.get("error"):
        print(cut(f"error:  {json.dumps(desc['error'])}", columns))
    if desc.get("output") is not None:
        for line in value_lines("output", desc["output"], columns):
            print(line)
    if desc.get("steps_next"):  # one page of a large fan-out's units: say how to see the rest
        print(f"(more steps: orbit describe {args.id} --steps-after '{desc['steps_next']}')")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from orbit.cli.watch import follow_history, raw_lines
    from orbit.local.timeline import render

    client = _client(args)
    if args.follow:
        if args.json or args.raw:
            raise UsageError("--follow prints the timeline as it grows; leave out --json and --raw")
        follow_history(client, args.id, args.expand, args.timeout)
        return 0
    # the state (read first, so the history is at least as new) says which steps are unfinished
    desc = None if args.json or args.raw else client.describe(args.id)
    # One page by default: a 200,000-element fan-out's history would take minutes to fetch and print.
    if args.limit < 1 or args.after_seq < 0:
        raise ValidationError("--limit must be at least 1 and --after-seq at least 0", "history")
    events = client.history(args.id, after_seq=args.after_seq, limit=args.limit)
    if len(events) >= args.limit > 0:
        print(f"(first {len(events)} events; more: orbit history {args.id} --after-seq {events[-1]['seq']})",
              file=sys.stderr)
    if args.json:
        _print_json(events)
    elif args.raw:
        for line in raw_lines(events):
            print(line)
    else:
        print(render(events, desc, args.expand, width()))  # ends with what each unfinished step waits for
        if desc and desc.get("parked"):  # RUNNING but deciding nothing until someone acts
            print(f"parked: {json.dumps(desc['parked'])}")
    return 0


def cmd_signal(args: argparse.Namespace) -> int:
    res = _client(args).signal(args.id, args.name, parse_json_arg(args.payload, "--payload"))
    _print_json(res) if args.json else print(f"signal {args.name} sent to {args.id}")
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    res = _client(args).cancel(args.id, reason=args.reason, force=args.force)
    _print_json(res) if args.json else print(f"cancel requested for {args.id}")
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    inp = parse_json_arg(args.input, "--input") if args.input else None
    _print_json(_client(args).query(args.id, args.name, inp))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from orbit.cli.finding import list_filters

    res = _client(args).list(workflow=args.workflow, status=args.status, limit=args.limit, cursor=args.cursor,
                             **list_filters(args))
    items = res.get("executions", []) if isinstance(res, dict) else res
    if args.json:
        _print_json(res)
        return 0
    columns = width()
    for e in items:
        eid = e.get("execution_id") or e.get("id")
        ended = utc(e.get("updated_at_ms")) if e.get("status") in TERMINAL else "-"
        print(
            cut(
                f"{eid}  {e.get('workflow')} v{e.get('version')}  {e.get('status'):<10}  "
                f"created {utc(e.get('created_at_ms'))}  ended {ended}",
                columns,
            )
        )
    if not items:
        print("(no executions)")
    cursor = res.get("next_cursor") if isinstance(res, dict) else None
    if cursor:  # a page is not the whole list: say how to get the rest
        print(f"(more: add --cursor {cursor})")
    return 0


def cmd_advance(args: argparse.Namespace) -> int:
    from orbit.cli.watch import advance

    res = advance(_client(args), args.duration)
    if args.json:
        _print_json(res)
    else:
        print(f"orbit dev's clock moved on by {args.duration}: now {utc(res.get('now_ms'))} (virtual)")
    return 0


def cmd_graph(args: argparse.Namespace) -> int:
    from orbit.core.definition import load_definition
    from orbit.core.definition.mermaid import to_mermaid

    require_file(args.file)
    if args.file.endswith(".py"):
        raise UsageError(
            f"{args.file}: `orbit graph` draws definitions (.yaml/.json); code workflows have no static graph"
        )
    print(to_mermaid(load_definition(args.file)))
    return 0


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


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("orbit-engine")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
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

    def local_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--workers",
            action="append",
            metavar="MODULE",
            help="a module name or .py file whose @orbit.worker.task functions serve steps (repeatable), "
            "e.g. --workers examples/workers/orders.py",
        )
        sp.add_argument(
            "--register",
            action="append",
            metavar="FILE",
            help="also register this definition, e.g. a child workflow (repeatable), "
            "e.g. --register examples/invoicing.yaml",
        )
        sp.add_argument(
            "--template",
            default=None,
            metavar="FILE",
            help="SAM template of the stack (default: $ORBIT_TEMPLATE, ./template.yaml, or the repository's)",
        )
        sp.add_argument(
            "--parameter",
            action="append",
            metavar="KEY=VALUE",
            help="a template parameter of the local stack (repeatable), "
            "e.g. --parameter HttpTaskEnabled=true",
        )

    sp = sub.add_parser(
        "run",
        help="run one execution to its end on the local stack, with live progress, timeline and output",
        epilog=_examples(
            "orbit run examples/order_fulfilment.yaml --input @examples/inputs/order.json \\",
            "    --workers examples/workers/orders.py --signal 'approval={\"approved\": true}'",
            'orbit run examples/trial_reminder.yaml --input \'{"email": "a@b.c"}\' '
            "--workers examples/workers/misc.py --json",
        ),
    )
    sp.add_argument(
        "file",
        metavar="FILE",
        help="a definition (.yaml/.json), or a .py file of @orbit.workflow functions, "
        "e.g. examples/trial_reminder.yaml",
    )
    sp.add_argument("--workflow", metavar="NAME", help="which code workflow of a .py FILE to run, e.g. greet")
    sp.add_argument(
        "--input",
        metavar="JSON",
        help='the input as JSON or @file.json (default: {}), e.g. --input \'{"email": "a@b.c"}\'',
    )
    sp.add_argument(
        "--signal",
        action="append",
        metavar="NAME=JSON",
        help="send a signal once started (repeatable), e.g. --signal 'approval={\"approved\": true}'",
    )
    sp.add_argument("--id", help="the execution id (default: generated), e.g. --id order-1")
    sp.add_argument(
        "--json", action="store_true", help="print {execution, history} as one JSON document on stdout"
    )
    sp.add_argument("--quiet", action="store_true", help="no live progress on stderr")
    sp.add_argument("--expand", action="store_true", help="show every element of a fan-out, and whole values")
    sp.add_argument(
        "--real-time",
        action="store_true",
        help="wait out sleeps, retries and timeouts in real time instead of skipping them",
    )
    sp.add_argument(
        "--mode",
        choices=["server", "inprocess"],
        default="server",
        help="moto as an HTTP endpoint on loopback, or in process (faster)",
    )
    sp.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="give up after this many seconds of wall time, printing the timeline so far",
    )
    local_opts(sp)
    sp.set_defaults(func=cmd_run)

    sp = sub.add_parser(
        "dev",
        help="keep the local stack up and serve the HTTP API on 127.0.0.1 (real time; see `orbit advance`)",
        epilog=_examples(
            "orbit dev examples/order_fulfilment.yaml --workers examples/workers/orders.py",
            "ORBIT_URL=http://127.0.0.1:8765 orbit start order-fulfilment "
            "--input @examples/inputs/order.json",
        ),
    )
    sp.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="definitions, or .py files of code workflows, to register, e.g. examples/trial_reminder.yaml",
    )
    sp.add_argument("--port", type=int, default=8765, help="the API's port on 127.0.0.1, e.g. --port 9000")
    local_opts(sp)
    sp.set_defaults(func=cmd_dev)  # also serves the console at /console/

    sp = sub.add_parser(
        "validate",
        help="check a definition (every problem with its path) or a .py file of code workflows",
        epilog=_examples("orbit validate examples/order_fulfilment.yaml", "orbit validate flow.yaml --json"),
    )
    sp.add_argument("file", metavar="FILE", help="a definition (.yaml/.json) or a .py file, e.g. flow.yaml")
    sp.add_argument("--json", action="store_true", help="print {file, valid, problems} as JSON on stdout")
    sp.set_defaults(func=cmd_validate)

    sp = sub.add_parser(
        "graph",
        help="print a definition's step graph as a Mermaid flowchart",
        epilog=_examples("orbit graph examples/order_fulfilment.yaml > order.mmd"),
    )
    sp.add_argument(
        "file", metavar="FILE", help="a definition (.yaml/.json), e.g. examples/order_fulfilment.yaml"
    )
    sp.set_defaults(func=cmd_graph)

    def api_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--url",
            default=None,
            help="the API URL (default: $ORBIT_URL, else http://127.0.0.1:8765 for `orbit dev`)",
        )
        sp.add_argument(
            "--stack",
            default=None,
            metavar="NAME",
            help="a deployed stack's name: its ApiUrl output is the URL, e.g. --stack orbit",
        )
        sp.add_argument(
            "--region",
            default=None,
            help="AWS region of --stack (default: $AWS_REGION or your AWS config), e.g. eu-west-1",
        )
        sp.add_argument("--json", action="store_true", help="print the API's answer as JSON on stdout")

    sp = sub.add_parser(
        "start",
        help="start an execution; exit 1 if it failed at start (or, with --wait, did not complete)",
        epilog=_examples(
            'orbit start trial-reminder --input \'{"email": "a@b.c"}\' --id t-1',
            "orbit start order-fulfilment --input @examples/inputs/order.json --wait",
        ),
    )
    sp.add_argument("name", metavar="WORKFLOW", help="a registered workflow name, e.g. trial-reminder")
    sp.add_argument("--input", metavar="JSON", help="the input as JSON or @file.json (default: {})")
    sp.add_argument(
        "--id", help="the execution id; starting again with the same id is safe (default: generated)"
    )
    sp.add_argument(
        "--version", help="the workflow version (default: the latest registered), e.g. --version 2"
    )
    sp.add_argument(
        "--wait", action="store_true", help="wait until the execution ends, then print its output"
    )
    sp.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="with --wait: give up after this many seconds",
    )
    api_opts(sp)
    sp.set_defaults(func=cmd_start)

    sp = sub.add_parser(
        "describe",
        help="status, steps, times (UTC) and output of an execution",
        epilog=_examples("orbit describe order-1", "orbit describe order-1 --json"),
    )
    sp.add_argument("id", metavar="ID", help="the execution id, e.g. order-1")
    sp.add_argument("--steps-after", default=None, metavar="UNIT",
                    help="show the steps after this unit (a page's last), e.g. --steps-after 'ship[999]'")
    sp.add_argument("--steps-limit", type=int, default=None, metavar="N",
                    help="at most this many steps (default: 1000), e.g. --steps-limit 50")
    api_opts(sp)
    sp.set_defaults(func=cmd_describe)

    sp = sub.add_parser(
        "history",
        help="an execution's history as a timeline (--raw: one line per event, --json: the events)",
        epilog=_examples(
            "orbit history order-1", "orbit history order-1 --follow", "orbit history order-1 --raw"
        ),
    )
    sp.add_argument("id", metavar="ID", help="the execution id, e.g. order-1")
    sp.add_argument("--raw", action="store_true", help="one line per event: seq, time (UTC), type, fields")
    sp.add_argument(
        "--follow", action="store_true", help="print new rows as they happen, until the execution ends"
    )
    sp.add_argument("--expand", action="store_true", help="show every element of a fan-out")
    sp.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="with --follow: stop following after this many seconds",
    )
    sp.add_argument("--after-seq", type=int, default=0, metavar="SEQ",
                    help="start after this event (a page's last seq), e.g. --after-seq 1000")
    sp.add_argument("--limit", type=int, default=HISTORY_PAGE, metavar="N",
                    help="at most this many events, e.g. --limit 100")
    api_opts(sp)
    sp.set_defaults(func=cmd_history)

    sp = sub.add_parser(
        "signal",
        help="send a signal to an execution",
        epilog=_examples("orbit signal order-1 approval --payload '{\"approved\": true}'"),
    )
    sp.add_argument("id", metavar="ID", help="the execution id, e.g. order-1")
    sp.add_argument(
        "name", metavar="NAME", help="the signal name, as the definition declares it, e.g. approval"
    )
    sp.add_argument("--payload", default="null", metavar="JSON", help="the payload as JSON or @file.json")
    api_opts(sp)
    sp.set_defaults(func=cmd_signal)

    sp = sub.add_parser(
        "cancel",
        help="cancel an execution (its compensations run unless --force)",
        epilog=_examples("orbit cancel order-1 --reason 'customer left'"),
    )
    sp.add_argument("id", metavar="ID", help="the execution id, e.g. order-1")
    sp.add_argument("--reason", help="recorded in the history, e.g. --reason 'customer left'")
    sp.add_argument("--force", action="store_true", help="skip compensation")
    api_opts(sp)
    sp.set_defaults(func=cmd_cancel)
    sp = sub.add_parser(
        "query",
        help="ask a running or ended execution a query it declares (records nothing)",
        epilog=_examples("orbit query ID stage", "orbit query ID line --input '{\"index\": 0}'"),
    )
    sp.add_argument("id", help="the execution id, e.g. order-1")
    sp.add_argument("name", help="a query its workflow declares, e.g. stage")
    sp.add_argument("--input", help="JSON or @file.json: the query's input")
    api_opts(sp)
    sp.set_defaults(func=cmd_query)

    from orbit.cli.finding import add_list_filters

    sp = sub.add_parser(
        "list",
        help="list executions, newest first, with created and ended times (UTC)",
        epilog=_examples("orbit list --status running", "orbit list --workflow trial-reminder --limit 5",
                         "orbit list --started-after 2026-03-01T00:00:00Z "
                         "--started-before 2026-03-02T00:00:00Z"),
    )
    sp.add_argument(
        "--status",
        type=str.upper,
        choices=WORKFLOW_STATUSES,
        help="only executions with this status (any case), e.g. --status failed",
    )
    sp.add_argument(
        "--workflow", metavar="NAME", help="only executions of this workflow, e.g. --workflow trial-reminder"
    )
    sp.add_argument(
        "--limit", type=int, help="at most this many (default: the API's page size, 50), e.g. --limit 10"
    )
    sp.add_argument("--cursor", help="the next page, as printed after the previous one")
    add_list_filters(sp)
    api_opts(sp)
    sp.set_defaults(func=cmd_list)
    from orbit.cli.recovery import add_recovery_commands

    add_recovery_commands(sub, api_opts, lambda args: _client(args))  # looked up when called
    from orbit.cli.updates import add_update_parser

    add_update_parser(sub, api_opts, lambda args: _client(args))

    sp = sub.add_parser(
        "advance",
        help="move `orbit dev`'s virtual clock on, and run what became due (timers, retries, timeouts)",
        epilog=_examples("orbit advance 7d", "orbit advance 90s --url http://127.0.0.1:9000"),
    )
    sp.add_argument("duration", metavar="DURATION", help="how far: 500ms, 30s, 5m, 2h, 7d or 1h30m, e.g. 7d")
    api_opts(sp)
    sp.set_defaults(func=cmd_advance)

    add_schedule_parser(sub, api_opts)
    add_ui_parser(sub)
    from orbit.cli.testing import add_testing_parsers

    add_testing_parsers(sub)
    from orbit.cli.evolution import add_parsers

    add_parsers(sub, api_opts, _client)
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
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keep interpreter shutdown from flushing again
        return 141  # what a shell reports for a command killed by SIGPIPE
    except Exception as exc:  # noqa: BLE001 - the CLI never shows a traceback unless asked to
        return report(exc, args.command, verbose, bool(getattr(args, "json", False)))


if __name__ == "__main__":
    sys.exit(main())
