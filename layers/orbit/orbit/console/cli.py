"""`orbit ui`: serve the console against `orbit dev`, a URL or a deployed stack."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def add_ui_parser(sub: argparse._SubParsersAction, port: Callable[[str], int] = int) -> None:
    sp = sub.add_parser(
        "ui",
        help="serve the web console on 127.0.0.1 (for orbit dev, --stack or --url)",
        epilog="examples:\n  orbit ui\n  orbit ui --stack orbit --region eu-west-1\n  orbit ui --url http://127.0.0.1:9000",
    )
    sp.add_argument("--url", default=None, help="API URL (default $ORBIT_URL or http://127.0.0.1:8765)")
    sp.add_argument("--stack", default=None, help="deployed stack name (reads its ApiUrl output)")
    sp.add_argument("--region", default=None, help="AWS region of --stack (default: your AWS configuration)")
    sp.add_argument("--port", type=port, default=8780, help="the console's port, e.g. --port 8781")
    sp.add_argument("--host", default="127.0.0.1", help="listen address (default loopback only)")
    sp.set_defaults(func=cmd_ui)


def cmd_ui(args: argparse.Namespace) -> int:
    from orbit.client import Client
    from orbit.console.server import client_backend, serve_console

    client = Client(url=args.url, stack=args.stack, region=args.region)
    how = " (signed with your AWS credentials)" if client.sign else ""
    return serve_console(client_backend(client), args.host, args.port, client.url + how)
