"""`orbit list` filters for finding executions: a start-time range (RFC 3339), a filter (`--where`)."""

from __future__ import annotations

import argparse
from typing import Any

from orbit.cli.args import UsageError


def add_list_filters(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--started-after", metavar="TIME",
                    help="only executions started at or after this RFC 3339 time, e.g. 2026-03-01T00:00:00Z")
    sp.add_argument("--started-before", metavar="TIME",
                    help="only executions started before this RFC 3339 time, e.g. 2026-03-02T00:00:00+01:00")
    sp.add_argument("--where", metavar="FILTER",
                    help="conditions joined by AND on workflow, status, started, ended, id and search "
                         "attributes, e.g. --where 'status IN (RUNNING, FAILED) AND tier = gold AND "
                         "amount > 100' (docs/operations.md, \"Finding executions\")")


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
        out["where"] = check_filter(args.where, "--where")
    return out


def check_filter(text: str, option: str) -> str:
    """`text` when it parses and plans (orbit/core/search.py); else a usage error naming the option."""
    from orbit.core.search import parse, plan
    from orbit.errors import ValidationError

    try:
        plan(parse(text))
    except ValidationError as e:
        raise UsageError(f"{option}: {e.problems[0].message if e.problems else e}") from None
    return text
