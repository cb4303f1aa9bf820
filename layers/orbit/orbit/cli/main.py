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
from pathlib import Path
from typing import Any

from orbit.cli.args import (
    UsageError,
    load_code_workflows,
    local_parameters,
    parse_json_arg,
    parse_signal_arg,
)
from orbit.core.history.state import WORKFLOW_STATUSES
from orbit.errors import ExecutionEnded, OrbitError, ValidationError
from orbit.service.operations import HISTORY_PAGE

TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT")


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


# ---------------------------------------------------------------------- local commands
def cmd_validate(args: argparse.Namespace) -> int:
    from orbit.core.definition import validate_file

    path = Path(args.file)
    if not path.is_file():
        print(f"{path}: file not found", file=sys.stderr)
        return 2
    if path.suffix == ".py":  # code workflows: valid when the file imports and defines some
        try:
            found = load_code_workflows(str(path))
        except UsageError as exc:
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


RUN_TIMELINE_EVENTS = 2000


def cmd_run(args: argparse.Namespace) -> int:
    from orbit.local import LocalStack
    from orbit.local.progress import ProgressPrinter
    from orbit.local.timeline import render

    inp = parse_json_arg(args.input, "--input") if args.input else {}
    signals = [parse_signal_arg(s) for s in args.signal or []]
    parameters = local_parameters(args.parameter, args.template)
    out = sys.stderr if args.json else sys.stdout
    from orbit.core.definition import load_definition

    for path in [*(args.register or []), *([] if args.file.endswith(".py") else [args.file])]:
        load_definition(path)  # fail fast, before the local stack starts, with every problem listed
    if args.file.endswith(".py"):
        load_code_workflows(args.file)  # likewise: a file that does not import is named, no traceback
    with LocalStack(
        template=args.template,
        mode=args.mode,
        workers=args.workers or [],
        auto_advance=not args.real_time,
        parameters=parameters,
    ) as stack:
        for extra in args.register or []:
            stack.register(extra)
        name = _register_run_target(stack, args)
        exec_id = stack.start(name, inp, id=args.id)
        print(f"started {name} as {exec_id}", file=out)
        for sig_name, payload in signals:
            try:
                stack.signal(exec_id, sig_name, payload)
            except ExecutionEnded as e:  # e.g. its input was refused: show that outcome, not this
                print(f"orbit run: --signal {sig_name}: {e}", file=sys.stderr)
        printer = ProgressPrinter(out, quiet=args.quiet)
        desc = stack.run_until_done(exec_id, on_progress=printer.update, wall_timeout_s=args.timeout)
        # The timeline shows the first RUN_TIMELINE_EVENTS events: a 200,000-element fan-out's
        # million would take minutes and gigabytes to read and print, after the work is done.
        history = stack.engine.history(exec_id, 0, RUN_TIMELINE_EVENTS + 1)
    cut = len(history) > RUN_TIMELINE_EVENTS
    history = history[:RUN_TIMELINE_EVENTS]
    if args.json:
        _print_json({"execution": desc, "history": history, **({"history_truncated": True} if cut else {})})
    else:
        print("", file=out)
        print(render(history), file=out)
        if cut:
            print(f"(timeline: the first {RUN_TIMELINE_EVENTS} events; run it under `orbit dev` and use "
                  "`orbit history ID --after-seq N` for the rest)", file=out)
        print("", file=out)
        print(f"status: {desc['status']}", file=out)
        if desc.get("error"):
            print(f"error:  {json.dumps(desc['error'])}", file=out)
            if desc["error"].get("code") == "UNKNOWN_WORKFLOW":
                print("hint:   register the child workflow too: --register CHILD.yaml", file=out)
        print("output: " + json.dumps(desc.get("output"), indent=2), file=out)
    return 0 if desc["status"] == "COMPLETED" else 1


def _register_run_target(stack: Any, args: argparse.Namespace) -> str:
    """A definition file, or a .py file whose @orbit.workflow functions all register (--workflow picks)."""
    if not args.file.endswith(".py"):
        return str(stack.register(args.file))
    found = load_code_workflows(args.file)
    for wf in found.values():
        stack.register(wf)
    if args.workflow:
        if args.workflow not in found:
            raise UsageError(f"--workflow {args.workflow}: {args.file} defines {', '.join(sorted(found))}")
        return str(args.workflow)
    if len(found) > 1:
        raise UsageError(
            f"{args.file} defines several workflows ({', '.join(sorted(found))}); pick one with --workflow"
        )
    return str(next(iter(found)))


def cmd_dev(args: argparse.Namespace) -> int:
    from orbit.local.devserver import serve

    parameters = local_parameters(args.parameter, args.template)
    files = list(args.files or []) + list(args.register or [])
    for f in files:
        if f.endswith(".py"):  # importing registers its @orbit.workflow functions process-wide
            print(f"code workflows of {f}: {', '.join(sorted(load_code_workflows(f)))}")
    return serve(
        port=args.port,
        template=args.template,
        workers=args.workers or [],
        definitions=[f for f in files if not f.endswith(".py")],
        parameters=parameters,
    )


# ---------------------------------------------------------------------- API commands
def _client(args: argparse.Namespace) -> Any:
    from orbit.client import Client

    return Client(url=args.url, stack=args.stack, region=args.region)


def cmd_start(args: argparse.Namespace) -> int:
    inp = parse_json_arg(args.input, "--input") if args.input else {}
    res = _client(args).start(args.name, inp, id=args.id, version=args.version)
    if args.json:
        _print_json(res)
    else:
        print(res.get("id") if isinstance(res, dict) else res)
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    paging = {k: v for k, v in (("steps_after", args.steps_after), ("steps_limit", args.steps_limit)) if v}
    desc = _client(args).describe(args.id, **paging)
    if args.json:
        _print_json(desc)
        return 0
    print(f"{desc['id']}  {desc['workflow']} v{desc['version']}  {desc['status']}")
    for unit, st in (desc.get("steps") or {}).items():
        err = f"  {st['error'].get('code')}" if st.get("error") else ""
        print(f"  {unit:<24} {st['status']:<12} attempt {st.get('attempt') or '-'}{err}")
    if desc.get("parked"):  # RUNNING but not deciding until someone acts: say why
        print(f"parked: {json.dumps(desc['parked'])}")
    if desc.get("progress") is not None:
        print(f"progress: {json.dumps(desc['progress'])}")
    if desc.get("error"):
        print(f"error:  {json.dumps(desc['error'])}")
    if desc.get("output") is not None:
        print(f"output: {json.dumps(desc['output'])}")
    if desc.get("steps_next"):  # one page of a large fan-out's units: say how to see the rest
        print(f"(more steps: orbit describe {args.id} --steps-after '{desc['steps_next']}')")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from orbit.local.timeline import render

    client = _client(args)
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
        for ev in events:
            fields = {k: v for k, v in ev.items() if k not in ("seq", "timestamp_ms", "type")}
            print(f"{ev['seq']:>5}  {ev['type']:<22} {json.dumps(fields, default=str)[:160]}")
    else:
        print(render(events, desc))  # ends with what each unfinished step waits for
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


def cmd_list(args: argparse.Namespace) -> int:
    res = _client(args).list(workflow=args.workflow, status=args.status, limit=args.limit, cursor=args.cursor)
    items = res.get("executions", []) if isinstance(res, dict) else res
    if args.json:
        _print_json(res)
        return 0
    for e in items:
        eid = e.get("execution_id") or e.get("id")
        print(f"{eid}  {e.get('workflow')} v{e.get('version')}  {e.get('status')}")
    if not items:
        print("(no executions)")
    cursor = res.get("next_cursor") if isinstance(res, dict) else None
    if cursor:  # a page is not the whole list: say how to get the rest
        print(f"(more: add --cursor {cursor})")
    return 0


# ---------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="orbit", description="Orbit: durable workflows on AWS, and locally.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def local_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--workers",
            action="append",
            metavar="MODULE",
            help="module name or .py file whose @orbit.worker.task functions serve steps (repeatable)",
        )
        sp.add_argument(
            "--register",
            action="append",
            metavar="FILE",
            help="also register this definition (e.g. a child workflow; repeatable)",
        )
        sp.add_argument(
            "--template", default=None, help="SAM template (default: the repository's template.yaml)"
        )
        sp.add_argument(
            "--parameter",
            action="append",
            metavar="KEY=VALUE",
            help="a template parameter of the local stack, e.g. HttpTaskEnabled=true (repeatable)",
        )

    sp = sub.add_parser("run", help="run one execution to completion on the local stack")
    sp.add_argument("file", help="a definition (.yaml/.json) or a Python file with @orbit.workflow functions")
    sp.add_argument("--workflow", help="which code workflow of a .py FILE to run")
    sp.add_argument("--input", help="JSON or @file.json")
    sp.add_argument(
        "--signal", action="append", metavar="NAME=JSON", help="send a signal after start (repeatable)"
    )
    sp.add_argument("--id", help="execution id (default: generated)")
    sp.add_argument("--json", action="store_true", help="print {execution, history} as JSON on stdout")
    sp.add_argument("--quiet", action="store_true", help="no live progress")
    sp.add_argument("--real-time", action="store_true", help="do not skip idle waits")
    sp.add_argument(
        "--mode",
        choices=["server", "inprocess"],
        default="server",
        help="moto as an HTTP endpoint on loopback (default) or in process",
    )
    sp.add_argument("--timeout", type=float, default=300.0, help="give up after this many wall seconds")
    local_opts(sp)
    sp.set_defaults(func=cmd_run)

    sp = sub.add_parser("dev", help="keep the local stack up and serve the HTTP API on loopback")
    sp.add_argument("files", nargs="*", help="definitions, or .py files of code workflows, to register")
    sp.add_argument("--port", type=int, default=8765)
    local_opts(sp)
    sp.set_defaults(func=cmd_dev)

    sp = sub.add_parser(
        "validate", help="check a definition (every problem with its path) or a .py file of code workflows"
    )
    sp.add_argument("file")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_validate)

    def api_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--url", default=None, help="API URL (default $ORBIT_URL or http://127.0.0.1:8765)")
        sp.add_argument("--stack", default=None, help="deployed stack name (reads its ApiUrl output)")
        sp.add_argument("--region", default=None)
        sp.add_argument("--json", action="store_true")

    sp = sub.add_parser("start", help="start an execution")
    sp.add_argument("name")
    sp.add_argument("--input", help="JSON or @file.json")
    sp.add_argument("--id")
    sp.add_argument("--version")
    api_opts(sp)
    sp.set_defaults(func=cmd_start)
    sp = sub.add_parser("describe", help="status, steps, output of an execution")
    sp.add_argument("id")
    sp.add_argument("--steps-after", default=None, help="show the steps after this unit (a page's last)")
    sp.add_argument("--steps-limit", type=int, default=None, help="at most this many steps (default 1000)")
    api_opts(sp)
    sp.set_defaults(func=cmd_describe)
    sp = sub.add_parser("history", help="an execution's history as a timeline (--raw: events, --json)")
    sp.add_argument("id")
    sp.add_argument("--raw", action="store_true")
    sp.add_argument("--after-seq", type=int, default=0, help="start after this event (a page's last seq)")
    sp.add_argument("--limit", type=int, default=HISTORY_PAGE, help="at most this many events")
    api_opts(sp)
    sp.set_defaults(func=cmd_history)
    sp = sub.add_parser("signal", help="send a signal to an execution")
    sp.add_argument("id")
    sp.add_argument("name")
    sp.add_argument("--payload", default="null", help="JSON or @file.json")
    api_opts(sp)
    sp.set_defaults(func=cmd_signal)
    sp = sub.add_parser("cancel", help="cancel an execution")
    sp.add_argument("id")
    sp.add_argument("--reason")
    sp.add_argument("--force", action="store_true", help="skip compensation")
    api_opts(sp)
    sp.set_defaults(func=cmd_cancel)
    sp = sub.add_parser("list", help="list executions")
    sp.add_argument("--status", type=str.upper, choices=WORKFLOW_STATUSES, help="one status (any case)")
    sp.add_argument("--workflow")
    sp.add_argument("--limit", type=int)
    sp.add_argument("--cursor", help="the next page, as printed after the previous one")
    api_opts(sp)
    sp.set_defaults(func=cmd_list)
    from orbit.cli.recovery import add_recovery_commands

    add_recovery_commands(sub, api_opts, lambda args: _client(args))  # looked up when called
    return p


def main(argv: list[str] | None = None) -> int:
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
    except ValidationError as exc:
        # one problem per line, each with its path (and file, when the error knows it)
        prefix = f"{exc.source}: " if getattr(exc, "source", None) else ""
        print(f"orbit {args.command}: {len(exc.problems)} problem(s):", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {prefix}{problem}", file=sys.stderr)
        return 1
    except OrbitError as exc:
        print(f"orbit {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
