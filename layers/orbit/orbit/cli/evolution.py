"""`orbit replay` and `orbit unpark`: checking and recovering executions across deploys.

    orbit replay ID... --workflows FILE         histories read from the API (orbit dev or --stack)
    orbit replay --file H.json|DIR --workflows FILE
    orbit unpark ID                              try a parked execution again now

`--workflows` (repeatable) names the current code (.py files with @orbit.workflow)
or definitions (.yaml/.json). Each history is replayed through the workflow of
its name; the command stops at the first divergence, prints it and exits 1.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orbit.cli.args import UsageError, load_code_workflows
from orbit.errors import ValidationError


def load_workflows(files: list[str]) -> dict[str, list[Any]]:
    """name -> the workflows of that name in `files` (code and definitions)."""
    from orbit.core.definition import load_definition

    found: dict[str, list[Any]] = {}
    for f in files:
        if f.endswith(".py"):
            items = list(load_code_workflows(f).values())
        elif Path(f).is_file():
            items = [load_definition(f)]
        else:
            raise UsageError(f"--workflows {f}: file not found")
        for wf in items:
            found.setdefault(wf.name, []).append(wf)
    return found


def history_sources(args: argparse.Namespace, client: Callable[[], Any]) -> list[tuple[str, Any]]:
    """(label, raw history) for every --file (a folder: its *.json files) and execution id."""
    from orbit.testing.replay import load_history

    out: list[tuple[str, Any]] = []
    for f in args.file:
        path = Path(f)
        if path.is_dir():
            files = sorted(path.glob("*.json"))
            if not files:
                raise UsageError(f"--file {f}: the folder has no .json files")
        elif path.is_file():
            files = [path]
        else:
            raise UsageError(f"--file {f}: not found")
        for p in files:
            try:
                out.append((str(p), load_history(p)))
            except ValidationError as e:
                raise UsageError(f"{p}: {e.problems[0].message}") from None
    if args.ids:
        api = client()
        out.extend((eid, api.history(eid)) for eid in args.ids)
    if not out:
        raise UsageError("give execution ids (read from the API) or --file H.json|DIR")
    return out


def cmd_replay(args: argparse.Namespace, client: Callable[[], Any]) -> int:
    from orbit.core.runtime.replay_check import find_divergence, fold_history, parse_history

    if not args.workflows:
        raise UsageError("--workflows FILE is required: the code (.py) or definitions to replay on")
    workflows = load_workflows(args.workflows)
    for label, raw in history_sources(args, client):
        try:
            records = parse_history(raw, label)
        except ValidationError as e:
            raise UsageError(f"{label}: {e.problems[0].message}") from None
        state = fold_history(records)
        candidates = workflows.get(state.workflow) or []
        if not candidates:
            raise UsageError(f"{label}: the history is of workflow {state.workflow!r}, which no --workflows "
                             f"file has (they have: {', '.join(sorted(workflows)) or 'none'})")
        wf = next((w for w in candidates if str(w.version) == state.version), None)
        if wf is None and getattr(candidates[0], "kind", None) == "code":
            print(f"{label}: DIVERGED: the history is of version {state.version!r} of {state.workflow!r}; "
                  f"the code has {sorted(str(w.version) for w in candidates)} only")
            return 1
        found = find_divergence(wf or candidates[-1], records)
        if found is not None:
            print(f"{label}: DIVERGED: {found.message}")
            if args.json:
                print(json.dumps(found.details, indent=2, default=str))
            return 1
        print(f"{label}: ok ({len(records)} events, {state.workflow} v{state.version}, {state.status})")
    return 0


def cmd_unpark(args: argparse.Namespace, client: Callable[[], Any]) -> int:
    res = client().unpark(args.id)
    if args.json:
        print(json.dumps(res, indent=2, default=str))
    else:
        print(f"un-park requested for {args.id}; `orbit describe {args.id}` shows whether it is still parked")
    return 0


def add_parsers(sub: Any, api_opts: Callable[[argparse.ArgumentParser], None],
                client: Callable[[argparse.Namespace], Any]) -> None:
    sp = sub.add_parser(
        "replay", help="replay histories through the current code or definitions (CI check)",
        epilog="examples:\n  orbit replay --file histories/ --workflows flows.py\n"
               "  orbit replay order-1 order-2 --workflows flows.py --stack orbit")
    sp.add_argument("ids", nargs="*", help="execution ids, read from the API")
    sp.add_argument("--file", action="append", default=[],
                    help="a history (orbit history ID --json) or a folder of them")
    sp.add_argument("--workflows", action="append", default=[],
                    help="a .py file of code workflows, or a definition")
    api_opts(sp)
    sp.set_defaults(func=lambda a: cmd_replay(a, lambda: client(a)))
    sp = sub.add_parser("unpark", help="try a parked execution again now",
                        epilog="examples:\n  orbit unpark order-1\n  orbit unpark order-1 --stack orbit")
    sp.add_argument("id", metavar="ID", help="the parked execution's id, e.g. order-1")
    api_opts(sp)
    sp.set_defaults(func=lambda a: cmd_unpark(a, lambda: client(a)))
