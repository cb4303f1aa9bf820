"""`orbit list` filters for finding executions: a start-time range (RFC 3339), a search attribute."""

from __future__ import annotations

import argparse
from typing import Any

from orbit.cli.args import UsageError


def add_list_filters(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--started-after", metavar="TIME",
                    help="only executions started at or after this RFC 3339 time, e.g. 2026-03-01T00:00:00Z")
    sp.add_argument("--started-before", metavar="TIME",
                    help="only executions started before this RFC 3339 time, e.g. 2026-03-02T00:00:00+01:00")
    sp.add_argument("--where", metavar="NAME=VALUE",
                    help="only executions whose search attribute NAME is VALUE, e.g. --where tier=gold "
                         "(numbers and true/false match as such; quote to match text: code='\"42\"')")


def list_filters(args: argparse.Namespace) -> dict[str, Any]:
    """The filters as Client.list keywords; a bad time is a usage error naming the option."""
    from orbit.core.schedule.times import parse_time

    out: dict[str, Any] = {}
    for option, key in (("--started-after", "started_after"), ("--started-before", "started_before")):
        value = getattr(args, key, None)
        if value is None:
            continue
        try:
            parse_time(value)
        except ValueError as e:
            raise UsageError(f"{option}: {e}") from None
        out[key] = value
    if getattr(args, "where", None) is not None:
        from orbit.core.history.attributes import parse_where

        try:
            parse_where(args.where)
        except ValueError as e:
            raise UsageError(f"--where: {e}") from None
        out["where"] = args.where
    return out
