"""`on_signal`: event handlers, checked and built (docs/definitions.md, "Event handlers").

`on_signal: {NAME: {steps, output, concurrency, description}}` runs a small step graph each
time signal NAME arrives. The handler's steps are checked like the main flow's (same kinds
and keys, `after` and `steps.NAME` within the handler), with three differences: the root
also has `event` (the payload) and `main` (`main.steps.NAME`: the main flow's steps as they
are when the expression runs), a handler step may not be `wait_for`, and a signal name is
either waited for (`wait_for`) or handled, never both.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

from orbit.core.definition.checks import Problems, check_int, check_keys, join, type_name
from orbit.core.definition.model import Handler, Step

HANDLER_KEYS = ("steps", "output", "concurrency", "description")
# A handler's name is part of its unit keys (`on_signal:NAME@SEQ:step`), so no `:`, `@` or brackets.
HANDLER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,79}")
HANDLER_ROOT = ("input", "steps", "execution", "hooks", "event", "main")
DEFAULT_CONCURRENCY = 1


class GraphChecks(Protocol):
    """What validate.py lends this module (it imports this one, so not the other way round)."""

    def graph(self, steps: dict[Any, Any], prefix: str, roots: tuple[str, ...], out: Problems) -> None: ...

    def output(self, template: Any, path: str, names: set[str], roots: tuple[str, ...],
               out: Problems) -> None: ...


def check_handlers(document: dict[str, Any], out: Problems, v: GraphChecks) -> None:
    if "on_signal" not in document:
        return
    handlers = document["on_signal"]
    if not isinstance(handlers, dict) or not handlers:
        out.add("on_signal", "must be a non-empty mapping of signal names to handlers "
                             f"({{steps, output, concurrency}}), not {type_name(handlers)}")
        return
    main = document.get("steps")
    waited = {body["wait_for"]: name for name, body in (main.items() if isinstance(main, dict) else ())
              if isinstance(body, dict) and isinstance(body.get("wait_for"), str)}
    for name, body in handlers.items():
        if not isinstance(name, str):
            continue  # check_json reported the key
        path = join("on_signal", name)
        if not HANDLER_NAME.fullmatch(name):
            out.add(path, "a handled signal's name is 1-80 letters, digits, '_', '.' or '-', starting "
                          "with a letter or '_'")
        if name in waited:
            out.add(path, f"signal {name!r} is also waited for by steps.{waited[name]}.wait_for; a signal "
                          "either resumes a wait_for step or starts a handler, not both (rename one)")
        if not isinstance(body, dict):
            out.add(path, f"a handler must be a mapping with steps, not {type_name(body)}")
            continue
        check_keys(body, HANDLER_KEYS, path, out, "an on_signal handler")
        steps = body.get("steps")
        steps_path = join(path, "steps")
        names: set[str] = set()
        if "steps" not in body:
            out.add(steps_path, "required: a mapping of step names to steps")
        elif not isinstance(steps, dict) or not steps:
            got = "an empty mapping" if steps == {} else type_name(steps)
            out.add(steps_path, f"must be a non-empty mapping of step names to steps, not {got}")
        else:
            names = {n for n in steps if isinstance(n, str)}
            v.graph(steps, steps_path, HANDLER_ROOT, out)
            for step_name, step in steps.items():
                if isinstance(step, dict) and "wait_for" in step:
                    out.add(join(join(steps_path, step_name), "wait_for"),
                            "a handler cannot wait for a signal: instances of one handler would "
                            "compete for it; wait in the main flow, or handle that signal too")
        if "output" in body:
            v.output(body["output"], join(path, "output"), names, HANDLER_ROOT, out)
        if "concurrency" in body:
            check_int(body["concurrency"], join(path, "concurrency"), out, 1)
        if "description" in body and not isinstance(body["description"], str):
            out.add(join(path, "description"), f"must be a string, not {type_name(body['description'])}")


def build_handlers(raw: dict[str, Any], step: Callable[[str, dict[str, Any]], Step]) -> dict[str, Handler]:
    """The parsed handlers of a validated document; `step(name, body)` builds one step."""
    return {
        name: Handler(
            name=name,
            steps={n: step(n, b) for n, b in body["steps"].items()},
            output=body.get("output"),
            concurrency=int(body.get("concurrency", DEFAULT_CONCURRENCY)),
        )
        for name, body in (raw.get("on_signal") or {}).items()
    }
