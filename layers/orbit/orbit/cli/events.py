"""`orbit events put --bus default --detail-type T --detail JSON [--source S] [--aws]` (docs/triggers.md).

Sends one test event. Against `orbit dev` (the default, at --url / $ORBIT_URL) it goes on the local
EventBridge (moto), whose rules match it and start executions as on AWS; with `--aws` it goes to
the EventBridge of the environment's AWS credentials and region (AWS_ENDPOINT_URL honoured).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from orbit.cli.args import parse_json_arg
from orbit.errors import ValidationError

Clients = Callable[[argparse.Namespace], Any]


def cmd_events_put(args: argparse.Namespace, client: Clients) -> int:
    detail = parse_json_arg(args.detail, "--detail")
    if not isinstance(detail, dict):
        raise ValidationError("must be a JSON object (EventBridge refuses any other detail)", "--detail")
    body = {"bus": args.bus, "source": args.source, "detail_type": args.detail_type, "detail": detail}
    if args.aws:
        import boto3

        from orbit.adapters.events import put_event

        res = put_event(boto3.client("events"), **body)
    else:
        res = client(args)._call("POST", "/_local/events", body)
    if "error" in res:
        raise ValidationError(f"EventBridge refused the event: {res['error']}", "event")
    print(json.dumps(res) if args.json else f"event {res['event_id']} put on bus {args.bus}")
    return 0


def add_events_parser(sub: Any, api_opts: Callable[[argparse.ArgumentParser], None], client: Clients) -> None:
    examples = "\n  ".join(
        [
            "orbit events put --bus default --detail-type OrderPlaced --source shop "
            '--detail \'{"order_id": "A1", "total": 30}\'',
            "orbit events put --detail-type OrderPlaced --source shop --detail @order.json --aws",
        ]
    )
    sp = sub.add_parser("events", help="send a test event to EventBridge (triggers: docs/triggers.md)",
                        epilog=f"examples:\n  {examples}")
    inner = sp.add_subparsers(dest="events_command", required=True, metavar="SUBCOMMAND",
                              help="put: send one event")
    put = inner.add_parser(
        "put",
        help="put one event on a bus",
        epilog=f"examples:\n  {examples}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    put.add_argument("--bus", default="default", metavar="NAME", help="the event bus (default: default)")
    put.add_argument(
        "--detail-type",
        dest="detail_type",
        required=True,
        metavar="TYPE",
        help="the event's detail-type, e.g. OrderPlaced",
    )
    put.add_argument(
        "--detail", required=True, metavar="JSON", help="the detail: a JSON object or @file.json"
    )
    put.add_argument(
        "--source", default="orbit.cli", metavar="SOURCE", help="the event's source (default: orbit.cli)"
    )
    put.add_argument(
        "--aws",
        action="store_true",
        help="put it on AWS (the environment's credentials) instead of orbit dev's local EventBridge",
    )
    api_opts(put)
    put.set_defaults(func=lambda args: cmd_events_put(args, client))
