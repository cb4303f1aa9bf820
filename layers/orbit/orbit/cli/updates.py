"""`orbit update ID NAME --input JSON [--update-id ID] [--timeout S]` (docs/updates.md)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from orbit.cli.args import parse_json_arg

Clients = Callable[[argparse.Namespace], Any]  # cli.main's _client: args -> orbit.Client


def cmd_update(args: argparse.Namespace, client: Clients) -> int:
    inp = parse_json_arg(args.input, "--input") if args.input else None
    result = client(args).update(args.id, args.name, inp, update_id=args.update_id, timeout=args.timeout)
    print(json.dumps(result, indent=2))
    return 0


def add_update_parser(sub: Any, api_opts: Callable[[argparse.ArgumentParser], None], client: Clients) -> None:
    examples = "\n  ".join([
        "orbit update order-1 add_item --input '{\"sku\": \"A-1\", \"qty\": 2}'",
        "orbit update order-1 add_item --input @item.json --update-id add-A-1 --timeout 20",
    ])
    sp = sub.add_parser(
        "update", help="send a durable update to a running execution and print its result",
        epilog=f"examples:\n  {examples}", formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("id", metavar="ID", help="the execution id, e.g. order-1")
    sp.add_argument("name", metavar="NAME", help="an update its workflow declares, e.g. add_item")
    sp.add_argument("--input", metavar="JSON", help="JSON or @file.json: the update's input")
    sp.add_argument("--update-id", dest="update_id", metavar="ID",
                    help="makes the update idempotent: the same id has one effect and prints the same "
                         "result (made up when left out), e.g. --update-id add-A-1")
    sp.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                    help="wait at most this long for the result (0 to 25, default 10)")
    api_opts(sp)
    sp.set_defaults(func=lambda args: cmd_update(args, client))
