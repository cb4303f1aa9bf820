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
    sp.add_argument("--explain", action="store_true",
                    help="print what the filters read on DynamoDB (which index, which key condition, what is "
                         "checked on each row read) and send nothing")
    sp.add_argument("--where", metavar="FILTER",
                    help="conditions joined by AND on workflow, status, started, ended, id and search "
                         "attributes, e.g. --where 'status IN (RUNNING, FAILED) AND tier = gold AND "
                         "amount > 100' (docs/operations.md, \"Finding executions\")")


def explain(args: argparse.Namespace) -> str:
    """What `orbit list` with these filters reads on DynamoDB: the key condition, then what each
    row read is checked against (docs/operations.md, "Finding executions"). Nothing is sent."""
    from orbit.core.schedule.times import parse_time
    from orbit.core.search import from_params, plan, start_range
    from orbit.errors import ValidationError

    try:
        after = parse_time(args.started_after) if getattr(args, "started_after", None) else None
        before = parse_time(args.started_before) if getattr(args, "started_before", None) else None
        flt = from_params(getattr(args, "where", None) or None, args.workflow, args.status, after, before)
        p = plan(flt)
    except (ValueError, ValidationError) as e:
        message = e.problems[0].message if isinstance(e, ValidationError) and e.problems else str(e)
        raise UsageError(f"--where: {message}") from None
    lo, hi = start_range(flt)
    rng = ("" if lo is None and hi is None
           else f"; started in [{lo or 0}, {hi or 'now'}) ms is part of the key")
    rest = [c.text for c in flt.conds if c.field != "started" and c not in p.key]
    checked = f"; each row read is checked for: {' AND '.join(rest)}" if rest else ""
    return f"reads {p.uses}{rng}{checked}"


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
