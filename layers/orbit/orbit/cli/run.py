"""`orbit run` (one execution on a throwaway local stack, with its timeline) and `orbit dev` (the
local stack as a long-running HTTP endpoint, with the console mounted)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from orbit.cli.args import (
    UsageError,
    import_user_file,
    load_code_workflows,
    local_parameters,
    parse_json_arg,
    parse_signal_arg,
    require_file,
)
from orbit.errors import ExecutionEnded
from orbit.local.text import cut, value_lines, width

RUN_TIMELINE_EVENTS = 2000


def cmd_run(args: argparse.Namespace) -> int:
    from orbit.cli.checks import check_signals, check_tasks_served, definitions_to_run
    from orbit.local import LocalStack
    from orbit.local.progress import ProgressPrinter
    from orbit.local.stack import NothingDueInTime
    from orbit.local.timeline import render

    # Everything that can be checked is checked before the local stack starts (exit 2 for usage)
    require_file(args.file)
    inp = parse_json_arg(args.input, "--input") if args.input else {}
    signals = [parse_signal_arg(s) for s in args.signal or []]
    parameters = local_parameters(args.parameter, args.template)
    if args.timeout <= 0:
        raise UsageError(
            f"--timeout {args.timeout:g}: must be a number of seconds above 0, e.g. --timeout 600"
        )
    for spec in args.workers or []:
        import_user_file(spec, "--workers")  # a file that does not import is named with its line
    definitions = definitions_to_run(args.file, args.register or [])  # every problem listed
    if args.file.endswith(".py"):
        load_code_workflows(args.file)
    else:
        check_signals(definitions[0], [name for name, _ in signals])
    stdout = sys.stdout  # inside the local stack, sys.stdout carries the handlers' logs to stderr
    out = sys.stderr if args.json else stdout
    columns = None if args.json else width(out)
    with LocalStack(
        template=args.template,
        mode=args.mode,
        workers=args.workers or [],
        auto_advance=not args.real_time,
        parameters=parameters,
        logs_to_stderr=True,
    ) as stack:
        for extra in args.register or []:
            stack.register(extra)
        name = _register_run_target(stack, args)
        check_tasks_served(definitions)  # the stack's handlers are loaded: every served task is known
        exec_id = stack.start(name, inp, id=args.id)
        print(f"started {name} as {exec_id}", file=sys.stderr)
        for sig_name, payload in signals:
            try:
                stack.signal(exec_id, sig_name, payload)
            except ExecutionEnded as e:  # e.g. its input was refused: show that outcome, not this
                print(f"orbit run: --signal {sig_name}: {e}", file=sys.stderr)
        printer = ProgressPrinter(sys.stderr, quiet=args.quiet, expand=args.expand, columns=width(sys.stderr))
        try:
            desc = stack.run_until_done(
                exec_id, on_progress=printer.update, wall_timeout_s=args.timeout, real_time=args.real_time
            )
        except TimeoutError as exc:
            # the run is not over: show how far it got, then one line saying what to do
            desc = stack.describe(exec_id)
            history = stack.engine.history(exec_id, 0, RUN_TIMELINE_EVENTS)
            if isinstance(exc, NothingDueInTime):  # --real-time, and the next wake is too far off
                why = f"cannot end within --timeout {args.timeout:g} s of wall time: {exc}"
            else:
                why = f"had not ended after --timeout {args.timeout:g} s of wall time"
            msg = (f"execution {exec_id} {why} (its timeline so far is above); raise --timeout, "
                   "or drop --real-time to skip waits")
            if args.json:  # still one document: how far it got, and why it stopped
                error = {"code": "TIMEOUT", "message": msg}
                doc = {"execution": desc, "history": history, "error": error}
                print(json.dumps(doc, indent=2, default=str), file=stdout)
            else:
                print(render(history, desc, args.expand, columns), file=out)
            print(f"orbit run: {msg}", file=sys.stderr)
            return 1
        # The timeline shows the first RUN_TIMELINE_EVENTS events: a 200,000-element fan-out's
        # million would take minutes and gigabytes to read and print, after the work is done.
        history = stack.engine.history(exec_id, 0, RUN_TIMELINE_EVENTS + 1)
    truncated = len(history) > RUN_TIMELINE_EVENTS
    history = history[:RUN_TIMELINE_EVENTS]
    if args.json:
        doc = {"execution": desc, "history": history, **({"history_truncated": True} if truncated else {})}
        print(json.dumps(doc, indent=2, default=str), file=stdout)
    else:
        print("", file=out)
        print(render(history, None, args.expand, columns), file=out)
        if truncated:
            print(f"(timeline: the first {RUN_TIMELINE_EVENTS} events; run it under `orbit dev` and use "
                  "`orbit history ID --after-seq N` for the rest)", file=out)
        print("", file=out)
        print(f"status: {desc['status']}", file=out)
        if desc.get("error"):
            print(cut(f"error:  {json.dumps(desc['error'])}", columns), file=out)
            if desc["error"].get("code") == "UNKNOWN_WORKFLOW":
                print("hint:   register the child workflow too: --register CHILD.yaml", file=out)
        for line in value_lines("output", desc.get("output"), columns, args.expand):
            print(line, file=out)
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
    for f in args.files or []:
        require_file(f)
    for f in args.register or []:
        require_file(f, "--register")
    for app in getattr(args, "app", None) or []:
        if not (Path(app) / "template.yaml").is_file():
            raise UsageError(f"--app {app}: no template.yaml there (an app is a SAM application "
                             "directory, like examples/app)")
    for spec in args.workers or []:
        import_user_file(spec, "--workers")  # as `orbit run` does: a missing or broken file, before serving
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
        on_start=[_console_on_dev, _durable_on_dev],
        apps=list(getattr(args, "app", None) or []),
    )


def _durable_on_dev(dev: Any) -> None:
    from orbit.local.durable_server import mount_on_dev

    mount_on_dev(dev)  # docs/durable-functions.md


def _console_on_dev(dev: Any) -> None:
    from orbit.console.server import PREFIX, mount_on

    mount_on(dev)
    print(f"console: {dev.url}{PREFIX}/", flush=True)
