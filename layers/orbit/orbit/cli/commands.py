"""What the `orbit` command's own commands do: `validate` and `graph` on this machine, and the
API commands (start, describe, history, signal, cancel, query, list, advance).

The table in cli/table.py says which arguments each takes; an API command gets `connect`
(cli.main's `_client`, looked up when called: args -> orbit.Client).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from orbit.cli.args import UsageError, UserCodeError, load_code_workflows, parse_json_arg, require_file
from orbit.cli.recovery import Clients
from orbit.cli.watch import TERMINAL
from orbit.errors import ValidationError
from orbit.local.text import cut, utc, value_lines, width


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


# ---------------------------------------------------------------------- local commands
def cmd_validate(args: argparse.Namespace) -> int:
    from orbit.core.definition import validate_file

    path = require_file(args.file)
    if path.suffix == ".py":  # code workflows: valid when the file imports and defines some
        try:
            found = load_code_workflows(str(path))
        except UserCodeError as exc:
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


# ---------------------------------------------------------------------- API commands
def cmd_start(args: argparse.Namespace, connect: Clients) -> int:
    from orbit.cli.watch import ended_line, wait_for_end

    inp = parse_json_arg(args.input, "--input") if args.input else {}
    client = connect(args)
    priority = getattr(args, "priority", None)  # flow control: its place in its workflow's lines
    res = client.start(args.name, inp, id=args.id, version=args.version,
                       **({"priority": priority} if priority is not None else {}))
    eid = str(res.get("id") if isinstance(res, dict) else res)
    if args.wait:  # the id first: a Ctrl-C while waiting must not lose it
        print(f"started {args.name} as {eid}; waiting for its end (Ctrl-C stops waiting, not the execution)",
              file=sys.stderr)
    # a start decides at once: an input that broke the contract has already failed the execution
    desc = wait_for_end(client, eid, args.timeout) if args.wait else client.describe(eid)
    if args.json:
        _print_json(desc if args.wait else res)
    else:
        print(eid)
    if desc.get("status") in TERMINAL and desc.get("status") != "COMPLETED":
        print(f"orbit start: {ended_line(desc)}", file=sys.stderr)
        return 1
    if args.wait and not args.json:
        for line in value_lines("output", desc.get("output"), width()):
            print(line)
    return 0


def cmd_describe(args: argparse.Namespace, connect: Clients) -> int:
    paging = {k: v for k, v in (("steps_after", args.steps_after), ("steps_limit", args.steps_limit)) if v}
    desc = connect(args).describe(args.id, **paging)
    if args.json:
        _print_json(desc)
        return 0
    columns = width()
    print(f"{desc['id']}  {desc.get('workflow') or '-'} v{desc.get('version') or '-'}  {desc['status']}")
    if desc["status"] in ("WAITING", "DROPPED"):  # flow control: a start in line, or dropped by a rate
        from orbit.service.limits_view import waiting_line

        reason = (desc.get("dropped") or {}).get("reason")
        print(cut(f"dropped: {reason}" if reason else waiting_line(desc["flow"]), width()))
        return 0
    print(f"created: {utc(desc.get('created_at_ms'))}   ended: {utc(desc.get('finished_at_ms'))}")
    for unit, st in (desc.get("steps") or {}).items():
        err = f"  {st['error'].get('code')}" if st.get("error") else ""
        print(cut(f"  {unit:<24} {st['status']:<12} attempt {st.get('attempt') or '-'}{err}", columns))
        if st.get("waiting"):  # queued: a worker has not taken it (none may serve its task yet)
            print(cut(f"    {st['waiting']}", columns))
    if desc.get("parked"):  # RUNNING but not deciding until someone acts: say why
        print(cut(f"parked: {json.dumps(desc['parked'])}", columns))
    if desc.get("paused"):  # `orbit pause`: held until `orbit unpause`
        why = f" ({desc['paused'].get('reason')})" if desc["paused"].get("reason") else ""
        since = utc(desc["paused"].get("since_ms"))
        print(f"paused since {since}{why}: `orbit unpause {desc['id']}` lets it go on")
    if desc.get("progress") is not None:
        print(cut(f"progress: {json.dumps(desc['progress'])}", columns))
    if desc.get("error"):
        print(cut(f"error:  {json.dumps(desc['error'])}", columns))
    if desc.get("output") is not None:
        for line in value_lines("output", desc["output"], columns):
            print(line)
    if desc.get("steps_next"):  # one page of a large fan-out's units: say how to see the rest
        print(f"(more steps: orbit describe {args.id} --steps-after '{desc['steps_next']}')")
    return 0


def cmd_history(args: argparse.Namespace, connect: Clients) -> int:
    from orbit.cli.watch import follow_history, raw_lines
    from orbit.local.timeline import render

    client = connect(args)
    if args.follow:
        if args.json or args.raw:
            raise UsageError("--follow prints the timeline as it grows; leave out --json and --raw")
        follow_history(client, args.id, args.expand, args.timeout)
        return 0
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
        for line in raw_lines(events):
            print(line)
    else:
        print(render(events, desc, args.expand, width()))  # ends with what each unfinished step waits for
        if desc and desc.get("parked"):  # RUNNING but deciding nothing until someone acts
            print(f"parked: {json.dumps(desc['parked'])}")
    return 0


def cmd_signal(args: argparse.Namespace, connect: Clients) -> int:
    payload = parse_json_arg(args.payload, "--payload")
    if getattr(args, "start", None):
        res = connect(args).signal_with_start(args.id, args.start, args.name, payload,
                                              parse_json_arg(args.input, "--input"), signal_id=args.signal_id)
        verb = "started and signalled" if res.get("started") else "signalled"
        _print_json(res) if args.json else print(f"{args.id} {verb} ({args.name}, run of {args.start})")
        return 0
    res = connect(args).signal(args.id, args.name, payload, getattr(args, "signal_id", None))
    _print_json(res) if args.json else print(f"signal {args.name} sent to {args.id}")
    return 0


def cmd_cancel(args: argparse.Namespace, connect: Clients) -> int:
    res = connect(args).cancel(args.id, reason=args.reason, force=args.force)
    _print_json(res) if args.json else print(f"cancel requested for {args.id}")
    return 0


def cmd_limits(args: argparse.Namespace, connect: Clients) -> int:
    """`orbit limits`: every concurrency limit and rate with its use now (docs/flow-control.md)."""
    got = connect(args).limits()
    if args.json:
        _print_json(got)
        return 0
    columns = width()
    rows = got.get("limits") or []
    print(f"{'LIMIT':<32} {'KEY':<20} {'HELD':>9} {'WAITING':>8}  HOLDERS")
    for r in rows:
        held = f"{r['held']}/{r['max']}"
        print(cut(f"{r['limit']:<32} {r['key'] or '-':<20} {held:>9} {r['waiting']:>8}  "
                  f"{', '.join(r['holders']) or '-'}", columns))
    for b in got.get("rates") or []:
        name = b.get("name") or b["scope"]
        rate = f"{b['rate']} per {b['period_ms']} ms, burst {b['burst']}" if "rate" in b else ""
        tokens = b["level_ms"] / b["period_ms"] if b.get("period_ms") else None
        left = f"{tokens:.1f} tokens at {utc(b['at_ms'])}" if tokens is not None else ""
        print(cut(f"{'rate ' + name:<32} {b.get('key') or '-':<20} {rate}  {left}", columns))
    for s in got.get("shared") or []:  # the deployment's task and queue limits (every workflow's)
        parts = [f"{k} {json.dumps(s[k], sort_keys=True)}"
                 for k in ("concurrency", "rate", "priority") if k in s]
        print(cut(f"{'shared ' + s['limit']:<32} {'; '.join(parts)}  (declared by {s.get('from') or '-'})",
                  columns))
    if not rows and not got.get("rates"):
        print("no limit has been used yet")
    return 0


def cmd_pause(args: argparse.Namespace, connect: Clients) -> int:
    res = connect(args).pause(args.id, reason=args.reason or "")
    _print_json(res) if args.json else print(f"pause requested for {args.id}")
    return 0


def cmd_unpause(args: argparse.Namespace, connect: Clients) -> int:
    res = connect(args).unpause(args.id, reason=args.reason or "")
    _print_json(res) if args.json else print(f"unpause requested for {args.id}")
    return 0


def cmd_query(args: argparse.Namespace, connect: Clients) -> int:
    inp = parse_json_arg(args.input, "--input") if args.input else None
    _print_json(connect(args).query(args.id, args.name, inp))
    return 0


def cmd_list(args: argparse.Namespace, connect: Clients) -> int:
    from orbit.cli.finding import explain, list_filters

    if getattr(args, "explain", False):
        print(explain(args))
        return 0
    res = connect(args).list(workflow=args.workflow, status=args.status, limit=args.limit, cursor=args.cursor,
                             **list_filters(args))
    items = res.get("executions", []) if isinstance(res, dict) else res
    if args.json:
        _print_json(res)
        return 0
    columns = width()
    for e in items:
        eid = e.get("execution_id") or e.get("id")
        ended = utc(e.get("updated_at_ms")) if e.get("status") in TERMINAL else "-"
        print(
            cut(
                f"{eid}  {e.get('workflow')} v{e.get('version')}  {e.get('status'):<10}  "
                f"created {utc(e.get('created_at_ms'))}  ended {ended}",
                columns,
            )
        )
    if not items:
        print("(no executions)")
    cursor = res.get("next_cursor") if isinstance(res, dict) else None
    if cursor:  # a page is not the whole list: say how to get the rest
        print(f"(more: add --cursor {cursor})")
    return 0


def cmd_advance(args: argparse.Namespace, connect: Clients) -> int:
    from orbit.cli.watch import advance

    res = advance(connect(args), args.duration)
    if args.json:
        _print_json(res)
    else:
        print(f"orbit dev's clock moved on by {args.duration}: now {utc(res.get('now_ms'))} (virtual)")
    return 0


def cmd_graph(args: argparse.Namespace) -> int:
    from orbit.core.definition import load_definition
    from orbit.core.definition.mermaid import to_mermaid

    require_file(args.file)
    if args.file.endswith(".py"):
        raise UsageError(
            f"{args.file}: `orbit graph` draws definitions (.yaml/.json); code workflows have no static graph"
        )
    print(to_mermaid(load_definition(args.file)))
    return 0
