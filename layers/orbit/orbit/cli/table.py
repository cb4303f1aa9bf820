"""The `orbit` command's own commands as a table: each row is a command's name, help, examples,
arguments and the function that runs it (cli/commands.py, cli/run.py). `cli.main.build_parser`
turns the rows into subparsers, in order, between the commands other modules add themselves.

`opts` names the options a row shares with others: "local" (the local stack's: --workers,
--register, --template, --parameter) or "api" (--url, --stack, --region, --json); an "api" row's
function also gets the client factory (`cmd(args, connect)`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from orbit.cli.args import port
from orbit.cli.commands import (
    cmd_advance,
    cmd_cancel,
    cmd_describe,
    cmd_graph,
    cmd_history,
    cmd_limits,
    cmd_list,
    cmd_pause,
    cmd_query,
    cmd_signal,
    cmd_start,
    cmd_unpause,
    cmd_validate,
)
from orbit.cli.finding import add_list_filters
from orbit.cli.run import cmd_dev, cmd_run
from orbit.core.history.state import WORKFLOW_STATUSES
from orbit.service.operations import HISTORY_PAGE


@dataclass(frozen=True)
class Arg:
    flags: tuple[str, ...]
    options: dict[str, Any]


def arg(*flags: str, **options: Any) -> Arg:
    """One `add_argument(*flags, **options)` of a command."""
    return Arg(flags, options)


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    examples: tuple[str, ...]
    run: Callable[..., int]
    args: tuple[Arg, ...] = ()
    opts: str = ""  # "local" or "api": the shared options added after `args`
    more: Callable[[argparse.ArgumentParser], None] | None = field(default=None)  # arguments of its own

    def add_to(self, sub: Any, connect: Callable[[argparse.Namespace], Any]) -> argparse.ArgumentParser:
        sp = sub.add_parser(self.name, help=self.help, epilog=examples(*self.examples))
        for a in self.args + (LOCAL_OPTS if self.opts == "local" else ()):
            sp.add_argument(*a.flags, **a.options)
        if self.more is not None:
            self.more(sp)
        if self.opts == "api":
            add_api_opts(sp)
            sp.set_defaults(func=lambda args: self.run(args, connect))
        else:
            sp.set_defaults(func=self.run)
        return sp


def examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


LOCAL_OPTS = (
    arg("--workers", action="append", metavar="MODULE",
        help="a module name or .py file whose @orbit.worker.task functions serve steps (repeatable), "
        "e.g. --workers examples/workers/orders.py"),
    arg("--register", action="append", metavar="FILE",
        help="also register this definition, e.g. a child workflow (repeatable), "
        "e.g. --register examples/invoicing.yaml"),
    arg("--template", default=None, metavar="FILE",
        help="SAM template of the stack (default: $ORBIT_TEMPLATE, ./template.yaml, or the repository's)"),
    arg("--parameter", action="append", metavar="KEY=VALUE",
        help="a template parameter of the local stack (repeatable), e.g. --parameter HttpTaskEnabled=true"),
)

API_OPTS = (
    arg("--url", default=None,
        help="the API URL (default: $ORBIT_URL, else http://127.0.0.1:8765 for `orbit dev`)"),
    arg("--stack", default=None, metavar="NAME",
        help="a deployed stack's name: its ApiUrl output is the URL, e.g. --stack orbit"),
    arg("--region", default=None,
        help="AWS region of --stack (default: $AWS_REGION or your AWS config), e.g. eu-west-1"),
    arg("--json", action="store_true", help="print the API's answer as JSON on stdout"),
)


def add_api_opts(sp: argparse.ArgumentParser) -> None:
    """The API options (also what the commands other modules add pass as `api_opts`)."""
    for a in API_OPTS:
        sp.add_argument(*a.flags, **a.options)


LOCAL = (
    Command(
        "run", "run one execution to its end on the local stack, with live progress, timeline and output",
        ("orbit run examples/order_fulfilment.yaml --input @examples/inputs/order.json \\",
         "    --workers examples/workers/orders.py --signal 'approval={\"approved\": true}'",
         'orbit run examples/trial_reminder.yaml --input \'{"email": "a@b.c"}\' '
         "--workers examples/workers/misc.py --json"),
        cmd_run,
        (arg("file", metavar="FILE", help="a definition (.yaml/.json), or a .py file of @orbit.workflow "
             "functions, e.g. examples/trial_reminder.yaml"),
         arg("--workflow", metavar="NAME", help="which code workflow of a .py FILE to run, e.g. greet"),
         arg("--input", metavar="JSON",
             help='the input as JSON or @file.json (default: {}), e.g. --input \'{"email": "a@b.c"}\''),
         arg("--signal", action="append", metavar="NAME=JSON",
             help="send a signal once started (repeatable), e.g. --signal 'approval={\"approved\": true}'"),
         arg("--id", help="the execution id (default: generated), e.g. --id order-1"),
         arg("--json", action="store_true", help="print {execution, history} as one JSON document on stdout"),
         arg("--quiet", action="store_true", help="no live progress on stderr"),
         arg("--expand", action="store_true", help="show every element of a fan-out, and whole values"),
         arg("--real-time", action="store_true",
             help="wait out sleeps, retries and timeouts in real time instead of skipping them"),
         arg("--mode", choices=["server", "inprocess"], default="server",
             help="moto as an HTTP endpoint on loopback, or in process (faster)"),
         arg("--timeout", type=float, default=300.0, metavar="SECONDS",
             help="give up after this many seconds of wall time, printing the timeline so far")),
        opts="local"),
    Command(  # `orbit dev` also serves the console at /console/
        "dev", "keep the local stack up and serve the HTTP API on 127.0.0.1 (real time; see `orbit advance`)",
        ("orbit dev examples/order_fulfilment.yaml --workers examples/workers/orders.py",
         "ORBIT_URL=http://127.0.0.1:8765 orbit start order-fulfilment --input @examples/inputs/order.json"),
        cmd_dev,
        (arg("files", nargs="*", metavar="FILE", help="definitions, or .py files of code workflows, to "
             "register, e.g. examples/trial_reminder.yaml"),
         arg("--port", type=port, default=8765, help="the API's port on 127.0.0.1, e.g. --port 9000"),
         arg("--app", action="append", metavar="DIR",
             help="an app's SAM directory, deployed after Orbit's template: its queues, workers, "
                  "code workflows and Custom::OrbitDefinition resources, e.g. --app examples/app")),
        opts="local"),
    Command(
        "validate", "check a definition (every problem with its path) or a .py file of code workflows",
        ("orbit validate examples/order_fulfilment.yaml", "orbit validate flow.yaml --json"),
        cmd_validate,
        (arg("file", metavar="FILE", help="a definition (.yaml/.json) or a .py file, e.g. flow.yaml"),
         arg("--json", action="store_true", help="print {file, valid, problems} as JSON on stdout"))),
    Command(
        "graph", "print a definition's step graph as a Mermaid flowchart",
        ("orbit graph examples/order_fulfilment.yaml > order.mmd",),
        cmd_graph,
        (arg("file", metavar="FILE",
             help="a definition (.yaml/.json), e.g. examples/order_fulfilment.yaml"),)),
)

ID = arg("id", metavar="ID", help="the execution id, e.g. order-1")

API = (
    Command(
        "start", "start an execution; exit 1 if it failed at start (or, with --wait, did not complete)",
        ('orbit start trial-reminder --input \'{"email": "a@b.c"}\' --id t-1',
         "orbit start order-fulfilment --input @examples/inputs/order.json --wait"),
        cmd_start,
        (arg("name", metavar="WORKFLOW", help="a registered workflow name, e.g. trial-reminder"),
         arg("--input", metavar="JSON", help="the input as JSON or @file.json (default: {})"),
         arg("--id", help="the execution id; starting again with the same id is safe (default: generated)"),
         arg("--version", help="the workflow version (default: the latest registered), e.g. --version 2"),
         arg("--priority", type=int, choices=range(1, 6), metavar="N",
             help="1 (highest) .. 5: its place in its workflow's flow-control lines (docs/flow-control.md)"),
         arg("--wait", action="store_true", help="wait until the execution ends, then print its output"),
         arg("--timeout", type=float, default=600.0, metavar="SECONDS",
             help="with --wait: give up after this many seconds")),
        opts="api"),
    Command(
        "describe", "status, steps, times (UTC) and output of an execution",
        ("orbit describe order-1", "orbit describe order-1 --json"),
        cmd_describe,
        (ID,
         arg("--steps-after", default=None, metavar="UNIT",
             help="show the steps after this unit (a page's last), e.g. --steps-after 'ship[999]'"),
         arg("--steps-limit", type=int, default=None, metavar="N",
             help="at most this many steps (default: 1000), e.g. --steps-limit 50")),
        opts="api"),
    Command(
        "history", "an execution's history as a timeline (--raw: one line per event, --json: the events)",
        ("orbit history order-1", "orbit history order-1 --follow", "orbit history order-1 --raw"),
        cmd_history,
        (ID,
         arg("--raw", action="store_true", help="one line per event: seq, time (UTC), type, fields"),
         arg("--follow", action="store_true",
             help="print new rows as they happen, until the execution ends"),
         arg("--expand", action="store_true", help="show every element of a fan-out"),
         arg("--timeout", type=float, default=3600.0, metavar="SECONDS",
             help="with --follow: stop following after this many seconds"),
         arg("--after-seq", type=int, default=0, metavar="SEQ",
             help="start after this event (a page's last seq), e.g. --after-seq 1000"),
         arg("--limit", type=int, default=HISTORY_PAGE, metavar="N",
             help="at most this many events, e.g. --limit 100")),
        opts="api"),
    Command(
        "signal", "send a signal to an execution",
        ("orbit signal order-1 approval --payload '{\"approved\": true}'",
         "orbit signal order-1 item_added --payload '{\"sku\": \"A1\"}' --start orders --input '{}'"),
        cmd_signal,
        (ID,
         arg("name", metavar="NAME", help="the signal name, as the definition declares it, e.g. approval"),
         arg("--payload", default="null", metavar="JSON", help="the payload as JSON or @file.json"),
         arg("--start", metavar="WORKFLOW",
             help="signal-with-start: start the execution (a run of WORKFLOW) first if it does not exist"),
         arg("--input", default="null", metavar="JSON",
             help="with --start: the input of the execution if it is started, as JSON or @file.json"),
         arg("--signal-id", metavar="ID", help="makes a retry idempotent: the same id is received once")),
        opts="api"),
    Command(
        "cancel", "cancel an execution (its compensations run unless --force)",
        ("orbit cancel order-1 --reason 'customer left'",),
        cmd_cancel,
        (ID,
         arg("--reason", help="recorded in the history, e.g. --reason 'customer left'"),
         arg("--force", action="store_true", help="skip compensation")),
        opts="api"),
    Command(
        "limits", "list flow control's concurrency limits and rates with their use now",
        ("orbit limits", "orbit limits --json"),
        cmd_limits,
        (),
        opts="api"),
    Command(
        "pause", "hold an execution: nothing new is dispatched, no timer fires; answers are recorded",
        ("orbit pause order-1 --reason 'supplier outage'",),
        cmd_pause,
        (ID, arg("--reason", help="recorded in the history, e.g. --reason 'supplier outage'")),
        opts="api"),
    Command(
        "unpause", "let a paused execution go on: everything that came due meanwhile runs",
        ("orbit unpause order-1",),
        cmd_unpause,
        (ID, arg("--reason", help="recorded in the history")),
        opts="api"),
    Command(
        "query", "ask a running or ended execution a query it declares (records nothing)",
        ("orbit query ID stage", "orbit query ID line --input '{\"index\": 0}'"),
        cmd_query,
        (ID,
         arg("name", metavar="NAME", help="a query its workflow declares, e.g. stage"),
         arg("--input", help="JSON or @file.json: the query's input")),
        opts="api"),
    Command(
        "list", "list executions, newest first, with created and ended times (UTC)",
        ("orbit list --status running", "orbit list --workflow trial-reminder --limit 5",
         "orbit list --started-after 2026-03-01T00:00:00Z --started-before 2026-03-02T00:00:00Z"),
        cmd_list,
        (arg("--status", type=str.upper, choices=WORKFLOW_STATUSES,
             help="only executions with this status (any case), e.g. --status failed"),
         arg("--workflow", metavar="NAME",
             help="only executions of this workflow, e.g. --workflow trial-reminder"),
         arg("--limit", type=int,
             help="at most this many (default: the API's page size, 50), e.g. --limit 10"),
         arg("--cursor", help="the next page, as printed after the previous one")),
        opts="api", more=add_list_filters),
)

ADVANCE = Command(
    "advance", "move `orbit dev`'s virtual clock on, and run what became due (timers, retries, timeouts)",
    ("orbit advance 7d", "orbit advance 90s --url http://127.0.0.1:9000"),
    cmd_advance,
    (arg("duration", metavar="DURATION", help="how far: 500ms, 30s, 5m, 2h, 7d or 1h30m, e.g. 7d"),),
    opts="api")
