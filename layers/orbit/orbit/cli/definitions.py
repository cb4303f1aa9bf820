"""`orbit register`, `orbit workflows` and `orbit retire`: the definitions an Orbit API holds.

Like the other API commands they talk to `orbit dev` by default (the local stack), to --url, or to
--stack (its ApiUrl output). A code workflow (.py) is not sent anywhere: its code ships with the
process that replays it (`orbit dev FILE.py`, or the decider's deployment).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from orbit.cli.args import UsageError, require_file
from orbit.cli.recovery import Clients
from orbit.cli.table import Command, arg


def cmd_register(args: argparse.Namespace, connect: Clients) -> int:
    from orbit.core.definition import load_definition

    texts = []
    for file in args.files:  # every file is checked before any is sent: all or none registers
        path = require_file(file)
        if path.suffix == ".py":
            raise UsageError(f"{file}: a code workflow is registered by the process that runs it, not sent "
                             f"to an API; pass it to `orbit dev {file}` or ship it with the decider")
        load_definition(path)  # a DefinitionError lists every problem with its path in the file
        texts.append((file, path.read_text()))
    client = connect(args)
    answers = []
    for file, text in texts:
        res = client.register(text)
        answers.append({"file": file, **res})
        if not args.json:
            print(f"registered {res.get('name')} v{res.get('version')} from {file} ({res.get('hash')})")
    if args.json:
        print(json.dumps(answers, indent=2))
    return 0


def cmd_workflows(args: argparse.Namespace, connect: Clients) -> int:
    found: list[dict[str, Any]] = connect(args).workflows()
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    for wf in found:
        versions = []
        for v in wf.get("versions") or []:
            builds = len(v.get("builds") or [])
            note = [f"{builds} builds"] if builds > 1 else []
            if v.get("retired"):
                note.append("retired")
            versions.append(f"v{v.get('version')}" + (f" ({', '.join(note)})" if note else ""))
        print(f"{wf.get('name')}  {wf.get('kind')}  {', '.join(versions)}")
    if not found:
        print("(no workflows registered; add one with `orbit register FILE`)")
    return 0


def cmd_retire(args: argparse.Namespace, connect: Clients) -> int:
    name, sep, version = args.name.partition("@")
    if not name or (sep and not version):
        raise UsageError(f"{args.name!r}: expected NAME or NAME@VERSION, e.g. order-fulfilment@2")
    res = connect(args).retire(name, version or None)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        retired = ", ".join(f"v{v}" for v in res.get("retired") or [])
        print(f"retired {name} {retired}: new starts are refused; running executions finish")
    return 0


COMMANDS = (
    Command(
        "register", "register definitions with the API (orbit dev's by default, or --url / --stack)",
        ("orbit register examples/order_fulfilment.yaml examples/invoicing.yaml",
         "orbit register flows/*.yaml --stack orbit"),
        cmd_register,
        (arg("files", nargs="+", metavar="FILE", help="definitions (.yaml/.json), each checked before any "
             "is sent, e.g. examples/trial_reminder.yaml"),),
        opts="api"),
    Command(
        "workflows", "list the registered workflows with their versions (retired ones marked)",
        ("orbit workflows", "orbit workflows --stack orbit --json"),
        cmd_workflows,
        opts="api"),
    Command(
        "retire", "refuse new starts of a definition (one version, or all); running executions finish",
        ("orbit retire order-fulfilment@1", "orbit retire order-fulfilment --stack orbit"),
        cmd_retire,
        (arg("name", metavar="NAME[@VERSION]",
             help="a registered definition, and the version to retire (default: every version), "
             "e.g. order-fulfilment@1"),),
        opts="api"),
)
