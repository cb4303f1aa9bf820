"""`orbit batch`: act on every execution a filter matches (docs/operations.md, "Bulk actions").

    orbit batch cancel  --where 'workflow = orders AND status = RUNNING' [--reason R] [--yes]
    orbit batch signal  --where ... --signal NAME [--payload JSON]
    orbit batch pause | unpause | redrive --where ...
    orbit batch fork    --where ... --from-step STEP
    orbit batch describe ID | stop ID

An action first previews how many executions match and asks before anything happens (--yes
skips the question; without a terminal it is required).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from orbit.cli.args import UsageError

Clients = Callable[[argparse.Namespace], Any]
ACTIONS = {"cancel": "cancel", "signal": "signal", "pause": "pause", "unpause": "unpause",
           "redrive": "redrive", "fork": "fork", "reset": "reset"}


def cmd_batch(args: argparse.Namespace, client: Clients) -> int:
    from orbit.cli.finding import check_filter

    if args.action == "reset":
        raise UsageError("Orbit has no reset (a redrive from a chosen step): `orbit batch redrive` continues "
                         "failed executions where they stopped, `orbit batch fork --from-step STEP` starts "
                         "new ones from a step")
    where = check_filter(args.where, "--where")
    extra: dict[str, Any] = {"reason": args.reason}
    if args.action == "signal":
        if not args.signal:
            raise UsageError("--signal NAME is required for `orbit batch signal`")
        extra["signal"] = args.signal
        if args.payload is not None:
            try:
                extra["payload"] = json.loads(args.payload)
            except ValueError as e:
                raise UsageError(f"--payload: not JSON: {e}") from None
    if args.action == "fork":
        if not args.from_step:
            raise UsageError("--from-step STEP is required for `orbit batch fork`")
        extra["from_step"] = args.from_step
    if args.action == "cancel" and args.force:
        extra["force"] = True
    api = client(args)
    seen = api.preview_batch(where)
    count = f"{'at least ' if seen.get('capped') else ''}{seen.get('count', 0)}"
    first = ", ".join(seen.get("first") or [])
    print(f"{args.action} would act on {count} execution(s) matching: {where}"
          + (f" (first: {first})" if first else ""), file=sys.stderr)
    if not seen.get("count"):
        print("nothing matches; nothing done", file=sys.stderr)
        return 0
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError("add --yes to act without a prompt (stdin is not a terminal)")
        answer = input(f"{args.action} {count} execution(s)? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("nothing done", file=sys.stderr)
            return 1
    res = api.batch(args.action, where, args.batch_id, **extra)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(f"batch {res['id']} started: {args.action} where {where}; follow it with "
              f"`orbit batch describe {res['id']}`")
    return 0


def cmd_describe(args: argparse.Namespace, client: Clients) -> int:
    res = client(args).describe_batch(args.id)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"batch {res['id']}: {res['action']} where {res['where']}")
    print(f"  status: {res['status']}  pages: {res['pages']}  in progress: {res['in_progress']}")
    print(f"  seen: {res['seen']}  acted: {res['acted']}  skipped: {res['skipped']}  failed: {res['failed']}")
    for e in res.get("errors") or []:
        print(f"  failed: {e['execution_id']}: {e['error']}")
    return 0


def cmd_stop(args: argparse.Namespace, client: Clients) -> int:
    res = client(args).stop_batch(args.id)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(f"batch {res['id']}: {res['status']} after {res['seen']} execution(s) "
              f"({res['acted']} acted on)")
    return 0


def add_batch_parser(sub: Any, api_opts: Callable[[argparse.ArgumentParser], None], client: Clients) -> None:
    bp = sub.add_parser("batch", help="act on every execution a filter matches (cancel, signal, pause, ...)",
                        epilog="examples:\n"
                               "  orbit batch cancel --where 'workflow = orders AND status = RUNNING'"
                               "\n  orbit batch signal --where 'tier = gold' --signal approve --payload '{}'"
                               "\n  orbit batch describe b-1a2b\n  orbit batch stop b-1a2b")
    bsub = bp.add_subparsers(dest="batch_command", required=True, metavar="ACTION",
                             help="cancel, signal, pause, unpause, redrive, fork (reset explains why "
                                  "there is none), describe, stop")
    for action in ACTIONS:
        sp = bsub.add_parser(action, help=f"{action} every execution the filter matches")
        sp.add_argument("--where", required=True, metavar="FILTER",
                        help="the filter, as `orbit list --where` takes it (docs/operations.md)")
        sp.add_argument("--reason", default=None, help="recorded with each action")
        sp.add_argument("--id", dest="batch_id", default=None,
                        help="the batch's id: the same request again is the same batch (default: made up)")
        sp.add_argument("--yes", action="store_true", help="act without asking")
        if action == "signal":
            sp.add_argument("--signal", required=True, metavar="NAME", help="the signal to send")
            sp.add_argument("--payload", default=None, metavar="JSON", help="the signal's payload")
        else:
            sp.set_defaults(signal=None, payload=None)
        if action == "fork":
            sp.add_argument("--from-step", dest="from_step", required=True, metavar="STEP",
                            help="the step each fork runs again from")
        else:
            sp.set_defaults(from_step=None)
        if action == "cancel":
            sp.add_argument("--force", action="store_true", help="end at once, without compensation")
        else:
            sp.set_defaults(force=False)
        api_opts(sp)
        sp.set_defaults(action=action, func=lambda args: cmd_batch(args, client))
    for name, fn, text in (("describe", cmd_describe, "a batch's progress"),
                           ("stop", cmd_stop, "stop a batch: no further page is acted on")):
        sp = bsub.add_parser(name, help=text)
        sp.add_argument("id", metavar="ID", help="the batch's id (printed when it started)")
        api_opts(sp)
        sp.set_defaults(func=lambda args, fn=fn: fn(args, client))
