"""`orbit schedule create|update|describe|list|pause|resume|trigger|backfill|delete` (through the HTTP
API)."""

from __future__ import annotations

import argparse
import json
from typing import Any, Callable

from orbit.cli.args import parse_json_arg


def _client(args: argparse.Namespace) -> Any:
    from orbit.client import Client

    return Client(url=args.url, stack=args.stack, region=args.region)


def _show(args: argparse.Namespace, desc: dict[str, Any]) -> None:
    if args.json:
        print(json.dumps(desc, indent=2))
        return
    st = desc.get("state") or {}
    spec = desc.get("spec") or {}
    when = spec.get("cron") or f"every {spec.get('every_ms')} ms (offset {spec.get('offset_ms', 0)} ms)"
    print(f"{desc['id']}: {desc['workflow']} {when} [{spec.get('timezone')}] overlap={desc['overlap']}"
          f"{' PAUSED' if st.get('paused') else ''}{(' - ' + st['note']) if st.get('note') else ''}")
    counts = json.dumps(st.get("counts") or {}, sort_keys=True)  # JSON, not a Python dict
    print(f"  running: {', '.join(st.get('running') or []) or '-'}   counts: {counts}")
    print("  next: " + (", ".join(desc.get("next_occurrences") or []) or desc.get("next_problem") or "-"))
    for a in desc.get("actions") or []:
        eid, outcome = a.get("execution_id") or "-", a.get("outcome") or ""
        print(f"  {a['occurrence']}  {a['action']:<9} {eid}  {outcome}")


def cmd_create(args: argparse.Namespace) -> int:
    keys = ("cron", "every", "offset", "timezone", "start", "end", "jitter", "overlap", "catchup_window",
            "version")
    config: dict[str, Any] = {k: getattr(args, k) for k in keys if getattr(args, k) is not None}
    if args.exclude:
        config["exclude"] = args.exclude
    if args.pause_on_failure:
        config["pause_on_failure"] = True
    inp = parse_json_arg(args.input, "--input") if args.input else None
    _show(args, _client(args).create_schedule(args.id, args.workflow, inp, **config))
    return 0


def cmd_update(args: argparse.Namespace) -> int:
    """Change the named fields; the others keep their values (a read, then the full config)."""
    from orbit.core.schedule.changes import merged_config

    keys = ("workflow", "cron", "every", "offset", "timezone", "start", "end", "jitter", "overlap",
            "catchup_window", "version", "pause_on_failure")
    changes: dict[str, Any] = {k: getattr(args, k) for k in keys if getattr(args, k) is not None}
    if args.exclude:
        changes["exclude"] = args.exclude
    if args.input:
        changes["input"] = parse_json_arg(args.input, "--input")
    if not changes:
        from orbit.cli.args import UsageError

        raise UsageError("name at least one field to change, e.g. --cron \"0 10 * * MON\"")
    client = _client(args)
    _show(args, client.update_schedule(args.id, merged_config(client.describe_schedule(args.id), changes)))
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    _show(args, _client(args).describe_schedule(args.id))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    out = _client(args).list_schedules(args.limit)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for s in out["schedules"]:
        why = s.get("problem") or s.get("next_problem")
        print(f"{s.get('id') or '?':<30} {s.get('workflow') or '?':<24} "
              f"{'PAUSED' if s.get('paused') else 'active':<7} next {s.get('next_occurrence') or '-'}"
              + (f"  ({why})" if why else ""))
    return 0


def cmd_pause(args: argparse.Namespace) -> int:
    _show(args, _client(args).pause_schedule(args.id, args.note or ""))
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    _show(args, _client(args).resume_schedule(args.id, args.note or ""))
    return 0


def cmd_trigger(args: argparse.Namespace) -> int:
    eid = _client(args).trigger_schedule(args.id, args.overlap)
    print(eid or "not started (overlap policy: skipped or buffered)")
    return 0


def cmd_backfill(args: argparse.Namespace) -> int:
    for eid in _client(args).backfill_schedule(args.id, args.start, args.end, args.overlap):
        print(eid)
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    _client(args).delete_schedule(args.id)
    print(f"deleted {args.id}")
    return 0


def _spec_options(sp: argparse.ArgumentParser, update: bool) -> None:
    """The spec and policy options `create` and `update` share (update's help says what replaces)."""
    replaces = " (replaces --every)" if update else ""
    sp.add_argument("--cron", help=f'5-field cron, e.g. "0 9 * * MON"{replaces}')
    default_zone = "" if update else " (default UTC)"
    sp.add_argument("--timezone", help=f"IANA zone for the cron, e.g. Europe/Paris{default_zone}")
    sp.add_argument("--every", help="interval, e.g. 15m" + (" (replaces --cron)" if update else ""))
    sp.add_argument("--offset", help="offset of the interval from the epoch, e.g. 5m")
    sp.add_argument("--start", help="RFC 3339 time of the first possible occurrence")
    sp.add_argument("--end", help="RFC 3339 time after which nothing fires")
    sp.add_argument("--jitter", help="delay each fire by up to this much, e.g. 30s")
    sp.add_argument("--exclude", action="append", help=("replaces the exclusions: " if update else "")
                    + "a local date or a cron expression (repeatable)")
    sp.add_argument("--overlap", choices=["skip", "buffer_one", "buffer_all", "cancel_other", "allow_all"],
                    help="what a fire does while a run is still going (default skip)")
    sp.add_argument("--catchup-window", dest="catchup_window",
                    help="how far back missed occurrences still fire, e.g. 2h (default 1h)")


def add_schedule_parser(sub: Any, api_opts: Callable[[argparse.ArgumentParser], None]) -> None:
    examples = "\n  ".join([
        'orbit schedule create nightly order-fulfilment --cron "30 2 * * *" --timezone Europe/Paris',
        "orbit schedule describe nightly",
        "orbit schedule backfill nightly --start 2026-11-01T00:00:00Z --end 2026-11-08T00:00:00Z",
    ])
    sched = sub.add_parser("schedule", help="cron and interval schedules that start workflows",
                           epilog=f"examples:\n  {examples}",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    ssub = sched.add_subparsers(dest="schedule_command", required=True, metavar="ACTION",
                                help="create, update, describe, list, pause, resume, trigger, backfill or "
                                     "delete")
    sp = ssub.add_parser("create", help="create a schedule (cron in a time zone, or every + offset)")
    sp.add_argument("id", metavar="ID",
                    help="the schedule id, e.g. nightly (runs are named ID:<occurrence time>)")
    sp.add_argument("workflow", help="the workflow each occurrence starts")
    sp.add_argument("--input", help="JSON or @file.json: the input of every run")
    sp.add_argument("--version", help="workflow version (default: the latest at each fire)")
    _spec_options(sp, update=False)
    sp.add_argument("--pause-on-failure", action="store_true", help="pause the schedule when a run fails")
    api_opts(sp)
    sp.set_defaults(func=cmd_create)
    update_examples = "\n  ".join([
        'orbit schedule update nightly --cron "0 3 * * *"',
        "orbit schedule update nightly --overlap buffer_one --input @order.json",
        "orbit schedule update every-15 --every 30m --offset 5m",
    ])
    sp = ssub.add_parser("update", help="change some fields of a schedule; the others keep their values",
                         epilog=f"examples:\n  {update_examples}",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("id", metavar="ID", help="the schedule id, e.g. nightly")
    sp.add_argument("--workflow", help="start this workflow instead")
    sp.add_argument("--input", help="JSON or @file.json: the input of every run from now on")
    sp.add_argument("--version", help="workflow version to start")
    _spec_options(sp, update=True)
    sp.add_argument("--pause-on-failure", dest="pause_on_failure", action=argparse.BooleanOptionalAction,
                    help="pause the schedule when a run fails (--no-pause-on-failure: do not)")
    api_opts(sp)
    sp.set_defaults(func=cmd_update)
    for name, fn, helptext in (("describe", cmd_describe, "spec, policies, state, last 10 actions, next 5"),
                               ("delete", cmd_delete, "delete a schedule (its runs are left alone)")):
        sp = ssub.add_parser(name, help=helptext)
        sp.add_argument("id", metavar="ID", help="the schedule id, e.g. nightly")
        api_opts(sp)
        sp.set_defaults(func=fn)
    sp = ssub.add_parser("list", help="list schedules")
    sp.add_argument("--limit", type=int, default=50, help="at most this many schedules (default 50)")
    api_opts(sp)
    sp.set_defaults(func=cmd_list)
    for name, fn in (("pause", cmd_pause), ("resume", cmd_resume)):
        sp = ssub.add_parser(name, help=f"{name} a schedule, with a note")
        sp.add_argument("id", metavar="ID", help="the schedule id, e.g. nightly")
        sp.add_argument("--note", help="why, shown by describe and list, e.g. --note 'db maintenance'")
        api_opts(sp)
        sp.set_defaults(func=fn)
    sp = ssub.add_parser("trigger", help="start a run now (under the overlap policy)")
    sp.add_argument("id", metavar="ID", help="the schedule id, e.g. nightly")
    sp.add_argument("--overlap", choices=["skip", "buffer_one", "buffer_all", "cancel_other", "allow_all"],
                    help="this run's overlap policy (default: the schedule's)")
    api_opts(sp)
    sp.set_defaults(func=cmd_trigger)
    sp = ssub.add_parser("backfill", help="act on the occurrences of a past time range")
    sp.add_argument("id", metavar="ID", help="the schedule id, e.g. nightly")
    sp.add_argument("--start", required=True, help="RFC 3339, inclusive")
    sp.add_argument("--end", required=True, help="RFC 3339, exclusive")
    sp.add_argument("--overlap", choices=["skip", "buffer_one", "buffer_all", "cancel_other", "allow_all"],
                    help="default allow_all")
    api_opts(sp)
    sp.set_defaults(func=cmd_backfill)
