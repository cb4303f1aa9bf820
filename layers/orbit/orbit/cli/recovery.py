"""`orbit redrive` and `orbit fork`: recover a failed execution (docs/recovery.md)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

Clients = Callable[[argparse.Namespace], Any]  # cli.main's _client: args -> orbit.Client


def cmd_redrive(args: argparse.Namespace, client: Clients) -> int:
    res = client(args).redrive(args.id, args.request_id)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        again = ", ".join(res.get("steps") or []) or "nothing failed; the workflow decides again"
        print(f"{args.id} redriven (redrive #{res.get('redrive_count')}); running again: {again}")
    return 0


def cmd_fork(args: argparse.Namespace, client: Clients) -> int:
    res = client(args).fork(args.id, args.from_step, args.new_id, args.version, args.despite_compensation)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(f"{res.get('id')} forked from {args.id} at step {args.from_step}")
    return 0


def add_recovery_commands(sub: Any, api_opts: Callable[[argparse.ArgumentParser], None],
                          client: Clients) -> None:
    sp = sub.add_parser("redrive", help="continue a FAILED or TIMED_OUT execution where it stopped",
                        epilog="examples:\n  orbit redrive order-1\n"
                               "  orbit redrive order-1 --stack orbit --json")
    sp.add_argument("id", metavar="ID", help="the FAILED or TIMED_OUT execution to go on with")
    sp.add_argument("--request-id", dest="request_id", default=None,
                    help="an id for this request: repeating it redrives once (default: made up)")
    api_opts(sp)
    sp.set_defaults(func=lambda args: cmd_redrive(args, client))
    sp = sub.add_parser("fork", help="start a new execution from a step of an earlier one, reusing what "
                                     "ran before that step",
                        epilog="examples:\n  orbit fork order-1 --from-step charge\n"
                               "  orbit fork order-1 --from-step charge --id order-1-retry --stack orbit")
    sp.add_argument("id", metavar="ID", help="the execution to fork (any status)")
    sp.add_argument("--from-step", dest="from_step", required=True, metavar="STEP",
                    help="the step to run again from (a step name, or a code workflow's unit key)")
    sp.add_argument("--id", dest="new_id", default=None, metavar="NEW",
                    help="the fork's id (default: made up)")
    sp.add_argument("--version", default=None, help="the workflow version to run (default: the newest)")
    sp.add_argument("--despite-compensation", dest="despite_compensation", action="store_true",
                    help="fork even though steps it reuses were compensated (their effects undone)")
    api_opts(sp)
    sp.set_defaults(func=lambda args: cmd_fork(args, client))
