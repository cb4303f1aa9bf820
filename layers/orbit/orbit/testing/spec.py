"""Test files for definitions (`*.test.yaml`, docs/testing-definitions.md): load and check them.

A file names its definition and holds named tests, each an input, mocks per task, a timeline of
signals, hook resumes, cancels and clock advances, and expectations. Everything that can be checked
without running is checked here, every problem with its path: a mock for a task the workflow never
calls, a mock output that breaks the task's `tasks.NAME.output` schema, an expectation on a step
that does not exist, a signal the workflow does not accept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orbit.core.definition import load_definition
from orbit.core.definition.checks import (
    Problems,
    check_duration,
    check_json,
    check_keys,
    check_template,
    join,
    suggest,
    type_name,
)
from orbit.core.definition.contracts import check_schema
from orbit.core.definition.durations import format_duration
from orbit.core.definition.expressions import expressions_in
from orbit.core.definition.load import parse_text
from orbit.core.definition.model import Definition
from orbit.core.definition.task_contracts import called_tasks
from orbit.core.runtime.dsl.interpreter import HTTP_TASK
from orbit.errors import ValidationError
from orbit.testing.spec_expect import check_expect

FILE_KEYS = ("definition", "register", "description", "defaults", "tests")
DEFAULT_KEYS = ("input", "mocks")
TEST_KEYS = ("description", "input", "mocks", "timeline", "expect")
BEHAVIOUR_KINDS = ("output", "error", "timeout", "crash")
MAX_TIMES = 10_000  # each answer is one scripted behaviour: keep a hostile file from asking for billions
ERROR_KEYS = ("code", "message", "retryable", "details")
ACTIONS = ("signal", "hook", "cancel", "advance")
ENTRY_KEYS = ("at", "signal", "hook", "cancel", "advance", "payload", "force")


class TestFileError(ValidationError):
    """A test file that cannot run; lists every problem with its path in the file."""

    __test__ = False  # not a pytest class

    def __init__(self, problems: list[Any], source: str) -> None:
        self.source = source
        super().__init__(problems)

    def __str__(self) -> str:
        return "; ".join(f"{self.source}: {p}" for p in self.problems)


@dataclass(frozen=True)
class Mock:
    kind: str  # output | error | timeout | crash
    value: Any = None  # the output, or the error {code, message, retryable, details}
    times: int | None = None  # None: answers every call left (the last behaviour only)
    templated: bool = False  # an output with {% %} expressions over the call's `input` and `attempt`


@dataclass(frozen=True)
class Entry:
    at_ms: int  # virtual time since the start at which the action happens
    action: str  # signal | hook | cancel | advance
    name: str = ""  # the signal (or hook's signal) name; the cancel reason
    payload: Any = None
    force: bool = False


@dataclass(frozen=True)
class Case:
    file: str
    name: str
    input: Any
    mocks: dict[str, list[Mock]]
    timeline: list[Entry]
    expect: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"


@dataclass
class Suite:
    file: str
    definition: Definition
    cases: list[Case] = field(default_factory=list)
    children: tuple[Definition, ...] = ()  # `register:`: child workflows its `workflow:` steps start

    @property
    def contracts(self) -> dict[str, Any]:
        return task_contracts(self.definition, self.children)


def load_suite(path: str | Path) -> Suite:
    """Parse and check a test file and its definition; raise TestFileError listing every problem."""
    source = str(path)
    doc = parse_text(_read(Path(path), source), source)
    out = Problems()
    if not isinstance(doc, dict):
        raise TestFileError([f"a test file is a mapping with `definition` and `tests`, not {type_name(doc)}"],
                            source)
    check_json(doc, "", out)  # YAML dates, NaN...: values no execution could carry
    check_keys(doc, FILE_KEYS, "", out, "a test file")
    target = doc.get("definition")
    if not isinstance(target, str) or not target:
        raise TestFileError([*out.items, join("", "definition") + ": required: the definition file, "
                             "relative to this file, e.g. `definition: order_fulfilment.yaml`"], source)
    def_path = Path(path).parent / target
    if not def_path.is_file():
        raise TestFileError([*out.items, f"definition: {def_path}: file not found"], source)
    definition = load_definition(def_path)  # a DefinitionError names the definition's own problems
    children = _children(doc.get("register", []), Path(path).parent, out)
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, dict):
        out.add("defaults", f"must be a mapping ({', '.join(DEFAULT_KEYS)}), not {type_name(defaults)}")
        defaults = {}
    check_keys(defaults, DEFAULT_KEYS, "defaults", out, "defaults")
    suite = Suite(source, definition, children=children)
    base_mocks = _mocks(defaults.get("mocks", {}), "defaults.mocks", suite, out)
    tests = doc.get("tests")
    if not isinstance(tests, dict) or not tests:
        out.add("tests", f"required: a non-empty mapping of test names to tests, not {type_name(tests)}")
    else:
        for name, body in tests.items():
            case = _case(source, str(name), body, defaults, base_mocks, suite, out)
            if case is not None:
                suite.cases.append(case)
    if out.items:
        raise TestFileError(out.items, source)
    return suite


def _read(path: Path, source: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise TestFileError([f"cannot read the file: {reason}"], source) from None


def _children(register: Any, folder: Path, out: Problems) -> tuple[Definition, ...]:
    if not isinstance(register, list) or not all(isinstance(f, str) for f in register):
        out.add("register", "must be a list of definition files, relative to this file, "
                            "e.g. [invoicing.yaml]")
        return ()
    found = []
    for i, name in enumerate(register):
        if not (folder / name).is_file():
            out.add(f"register[{i}]", f"{folder / name}: file not found")
        else:
            found.append(load_definition(folder / name))
    return tuple(found)


def task_contracts(d: Definition, children: tuple[Definition, ...] = ()) -> dict[str, Any]:
    """The `tasks:` contracts of a definition and of the child definitions registered with it."""
    out: dict[str, Any] = {}
    for one in (*children, d):
        out.update(one.tasks)
    return out


def _case(source: str, name: str, body: Any, defaults: dict[str, Any], base_mocks: dict[str, list[Mock]],
          suite: Suite, out: Problems) -> Case | None:
    d = suite.definition
    path = join("tests", name)
    if not isinstance(body, dict):
        out.add(path, f"a test is a mapping ({', '.join(TEST_KEYS)}), not {type_name(body)}")
        return None
    check_keys(body, TEST_KEYS, path, out, "a test")
    mocks = {**base_mocks, **_mocks(body.get("mocks", {}), join(path, "mocks"), suite, out)}
    timeline = _timeline(body.get("timeline", []), join(path, "timeline"), d, out)
    expect = body.get("expect", {})
    check_expect(expect, join(path, "expect"), d, out)
    return Case(source, name, body.get("input", defaults.get("input", {})), mocks, timeline,
                expect if isinstance(expect, dict) else {})


def _mocks(mocks: Any, path: str, suite: Suite, out: Problems) -> dict[str, list[Mock]]:
    if not isinstance(mocks, dict):
        out.add(path, f"must be a mapping of task names to lists of behaviours, not {type_name(mocks)}")
        return {}
    called: dict[str, str] = {}
    for d in (*suite.children, suite.definition):
        called.update(tasks_called(d))
    found: dict[str, list[Mock]] = {}
    for task, behaviours in mocks.items():
        where = join(path, str(task))
        if task not in called:
            listed = ", ".join(sorted(called)) or "none"
            out.add(where, f"the workflow never calls task {task!r}{suggest(str(task), called)} "
                           f"(it calls: {listed})")
            continue
        if not isinstance(behaviours, list) or not behaviours:
            out.add(where, "must be a non-empty list of behaviours, e.g. [{output: {...}, times: 2}]")
            continue
        schema = (suite.contracts.get(task) or {}).get("output")
        items = [_behaviour(b, f"{where}[{i}]", schema, f"tasks.{task}.output", out)
                 for i, b in enumerate(behaviours)]
        found[task] = [m for m in items if m is not None]
    return found


def _behaviour(body: Any, path: str, schema: Any, schema_path: str, out: Problems) -> Mock | None:
    if not isinstance(body, dict):
        out.add(path, f"a behaviour is a mapping with one of {', '.join(BEHAVIOUR_KINDS)}, "
                      f"not {type_name(body)}")
        return None
    check_keys(body, (*BEHAVIOUR_KINDS, "times"), path, out, "a behaviour")
    kinds = [k for k in BEHAVIOUR_KINDS if k in body]
    if len(kinds) != 1:
        out.add(path, f"needs exactly one of {', '.join(BEHAVIOUR_KINDS)}, found {len(kinds)}")
        return None
    kind = kinds[0]
    times = body.get("times")
    if "times" in body and (isinstance(times, bool) or not isinstance(times, int)
                            or not 1 <= times <= MAX_TIMES):
        out.add(join(path, "times"), f"must be a whole number from 1 to {MAX_TIMES}, not {times!r}")
        return None
    value = body[kind]
    if kind == "output" and any(True for _ in expressions_in(value)):
        # checked against the schema once evaluated, when the test runs
        check_template(value, join(path, "output"), out)
        return Mock(kind, value, times, templated=True)
    if kind == "output":
        err = check_schema(schema, value, "OUTPUT_CONTRACT_VIOLATION", "output")
        if err is not None:
            out.add(join(path, "output"), f"breaks {schema_path}: {err.message}")
    elif kind == "error":
        value = _error(value, join(path, "error"), out)
    elif value is not True:
        out.add(join(path, kind), f"write `{kind}: true`, not {value!r}")
    return Mock(kind, value, times)


def _error(value: Any, path: str, out: Problems) -> dict[str, Any]:
    if isinstance(value, str):
        value = {"code": value}
    if not isinstance(value, dict) or not isinstance(value.get("code"), str) or not value["code"]:
        out.add(path, "must be {code, message, retryable, details} with a code, e.g. {code: CARD_DECLINED}")
        return {"code": "MOCK_ERROR"}
    check_keys(value, ERROR_KEYS, path, out, "an error")
    if not isinstance(value.get("retryable", True), bool):
        out.add(join(path, "retryable"), f"must be true or false, not {value['retryable']!r}")
    return {"message": value["code"].lower(), "retryable": True, "details": None, **value}


def _timeline(entries: Any, path: str, d: Definition, out: Problems) -> list[Entry]:
    if not isinstance(entries, list):
        out.add(path, f"must be a list of actions ({', '.join(ACTIONS)}), not {type_name(entries)}")
        return []
    signals = d.signal_names()
    now = 0
    found: list[Entry] = []
    for i, body in enumerate(entries):
        where = f"{path}[{i}]"
        if not isinstance(body, dict):
            out.add(where, f"an action is a mapping with one of {', '.join(ACTIONS)}, not {type_name(body)}")
            continue
        check_keys(body, ENTRY_KEYS, where, out, "a timeline action")
        actions = [a for a in ACTIONS if a in body]
        if len(actions) != 1:
            out.add(where, f"needs exactly one of {', '.join(ACTIONS)}, found {len(actions)}")
            continue
        action = actions[0]
        if action == "advance":
            ms = check_duration(body["advance"], join(where, "advance"), out, positive=False)
            if "at" in body:
                out.add(join(where, "at"), "`advance` moves the clock on from where it is; it takes no `at`")
            now += ms or 0
            found.append(Entry(now, "advance"))
            continue
        at = now if "at" not in body else check_duration(body["at"], join(where, "at"), out, positive=False)
        at = now if at is None else at
        if at < now:
            out.add(join(where, "at"), f"{body['at']} is before the time the timeline already reached "
                                       f"({format_duration(now)} after the start); keep it in time order")
        now = max(now, at)
        value = body[action]
        if action in ("signal", "hook"):
            if value not in signals:
                known = ", ".join(signals) or "none"
                out.add(join(where, action), f"{d.name} accepts no signal {value!r}"
                                             f"{suggest(str(value), signals)} (it accepts: {known})")
            else:
                schema = d.signals[value].schema if value in d.signals else None
                err = check_schema(schema, body.get("payload"), "PAYLOAD_REFUSED", "payload")
                if err is not None:
                    out.add(join(where, "payload"), f"breaks signals.{value}.schema: {err.message}")
        elif not isinstance(value, str):
            out.add(join(where, "cancel"), f"the reason, a string, not {type_name(value)}")
        found.append(Entry(now, action, str(value), body.get("payload"), bool(body.get("force", False))))
    return found


def tasks_called(d: Definition) -> dict[str, str]:
    """Task name -> where it is called; `http` steps are served by the task `orbit.http`."""
    called = called_tasks(d.raw.get("steps"), d.raw.get("on_signal"))
    steps = [*d.steps.values(), *(s for h in d.handlers.values() for s in h.steps.values())]
    for step in steps:
        for body, where in ((step, step.name), (step.compensate, f"{step.name}.compensate")):
            if body is not None and body.kind == "http":
                called.setdefault(HTTP_TASK, where)
    return called


