"""Validate a definition document in one pass, collecting every problem with its path."""

from __future__ import annotations

import re
from typing import Any

from orbit.core.definition import expressions
from orbit.core.definition.checks import (
    Problems,
    check_duration,
    check_expression_string,
    check_json,
    check_keys,
    check_schema_doc,
    check_size,
    check_template,
    join,
    suggest,
    type_name,
)
from orbit.core.definition.graph import ORDERING_KEYS, find_cycles, step_after, step_reads
from orbit.core.definition.handlers import check_handlers
from orbit.core.definition.retention import retention_problem
from orbit.core.definition.steps_check import STEP_NAME, check_retry, check_step
from orbit.core.definition.task_contracts import check_tasks
from orbit.errors import Problem

TOP_KEYS = ("orbit", "name", "version", "description", "timeout", "input", "defaults", "steps",
            "output", "output_schema", "signals", "queries", "retention", "on_signal", "updates",
            "tasks", "attributes", "triggers", "concurrency", "rate", "priority", "queues")
DEFAULTS_KEYS = ("retry", "timeout", "queue_timeout", "heartbeat_timeout")
SIGNAL_KEYS = ("schema", "description")
# Names and versions end up in execution ids, table keys and queue names.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
FORMAT = 1
# What an expression can read (docs/definitions.md, "Expressions").
ROOT_FIELDS = ("input", "steps", "execution", "hooks")
ELEMENT_FIELDS = ("item", "index")


def validate_definition(document: Any, stored: bool = False) -> list[Problem]:
    """Every problem in ``document`` (an already-loaded YAML/JSON value); empty when valid.

    ``stored``: the document was registered before (a registry reloading it), so the checks a
    rule added since then would only strand its executions are skipped: today, schema patterns
    RE2 cannot run (such a schema fails its check at run time instead, naming the pattern) and
    calls of unknown functions (such a call fails its step with EXPRESSION_ERROR when it runs)."""
    out = Problems(stored)
    if not isinstance(document, dict):
        out.add("", f"a definition must be a mapping at the top level, not {type_name(document)}")
        return out.items
    if not check_size(document, out):
        return out.items
    check_json(document, "", out)
    check_keys(document, TOP_KEYS, "", out, "a definition")
    _check_header(document, out)
    if "input" in document:
        check_schema_doc(document["input"], "input", out)
    if "output_schema" in document:
        check_schema_doc(document["output_schema"], "output_schema", out)
    _check_defaults(document.get("defaults"), "defaults" in document, out)
    _check_signals(document.get("signals"), "signals" in document, out)
    steps = document.get("steps")
    if "steps" not in document:
        out.add("steps", "required: a mapping of step names to steps")
    elif not isinstance(steps, dict) or not steps:
        out.add("steps", f"must be a non-empty mapping of step names to steps, not {_desc(steps)}")
    else:
        _check_steps(steps, out)
    if "output" in document:
        output = document["output"]
        check_template(output, "output", out)
        names = {n for n in steps if isinstance(n, str)} if isinstance(steps, dict) else set()
        _check_reads(output, "output", names, None, out, ordering=False)
    _check_queries(document.get("queries"), "queries" in document, out)
    if "attributes" in document:
        names = {n for n in steps if isinstance(n, str)} if isinstance(steps, dict) else set()
        _check_attributes(document["attributes"], names, out)
    if "updates" in document:
        from orbit.core.definition.updates_check import check_updates

        check_updates(document, out, lambda t, p: _root_reads(t, p, (*ROOT_FIELDS, "update"), out))
    check_handlers(document, out, _GraphChecks())
    check_tasks(document, out)
    _check_flow(document, out)
    if "triggers" in document:  # docs/triggers.md
        from orbit.core.definition.triggers import check_triggers

        sigs = document.get("signals")
        check_triggers(document["triggers"], "triggers", out,
                       {n for n in sigs if isinstance(n, str)} if isinstance(sigs, dict) else set())
    _check_hooks(document, out)
    _check_roots(document, out)
    if not stored:
        _check_patterns(document, out)
    return out.items


def _check_flow(document: dict[str, Any], out: Problems) -> None:
    """`concurrency`, `rate`, `priority`, `queues` and the flow keys of `tasks:` (core/flow/spec.py)."""
    from orbit.core.flow.spec import parse_flow

    for problem in parse_flow(document, document.get("tasks"), document.get("queues"))[1]:
        out.add(problem.path, problem.message)


def _check_patterns(document: dict[str, Any], out: Problems) -> None:
    """Every schema's regular expressions run on RE2: one it cannot run is refused, by its path."""
    from orbit.core.definition.schema_regex import pattern_problems

    schemas: list[tuple[str, Any]] = [(key, document[key]) for key in ("input", "output_schema")
                                      if key in document]
    for group, side_keys in (("signals", ("schema",)), ("tasks", ("input", "output"))):
        bodies = document.get(group)
        for name, body in (bodies.items() if isinstance(bodies, dict) else ()):
            if isinstance(body, dict):
                schemas += [(join(join(group, name), k), body[k]) for k in side_keys if k in body]
    for path, schema in schemas:
        for where, why in pattern_problems(schema):
            out.add(join(path, where) if where else path, why)


def _check_attributes(block: Any, names: set[str], out: Problems) -> None:
    """`attributes:` name -> an expression (or a constant) giving a string, number or boolean."""
    from orbit.core.history.attributes import MAX_ATTRIBUTES, key_problem, value_problem

    if not isinstance(block, dict) or not block:
        out.add("attributes", f"must be a non-empty mapping of attribute names to expressions, not "
                              f"{type_name(block)}")
        return
    if len(block) > MAX_ATTRIBUTES:
        out.add("attributes", f"at most {MAX_ATTRIBUTES} attributes, not {len(block)}")
    for key, value in block.items():
        path = join("attributes", key)
        problem = key_problem(key)
        if problem:
            out.add(path, problem)
        elif isinstance(value, str) and expressions.is_expression(value):
            check_template(value, path, out)
            _check_reads(value, path, names, None, out, ordering=False)
            _root_reads(value, path, ROOT_FIELDS, out)
        elif (problem := value_problem(value)) is not None:
            out.add(path, f"must be an expression \"{{% ... %}}\" or a constant: {problem}")


def _check_queries(queries: Any, present: bool, out: Problems) -> None:
    """`queries: {NAME: "{% expr %}"}`: read-only expressions over the step-input root plus `query`
    (the caller's input); a query never reads a step that does not exist."""
    if not present:
        return
    if not isinstance(queries, dict):
        out.add("queries", f"must be a mapping of query names to expressions, not {type_name(queries)}")
        return
    for name, expr in queries.items():
        path = join("queries", str(name))
        if not isinstance(name, str) or not STEP_NAME.fullmatch(name):
            out.add(path, "a query name is letters, digits, _ and - (starting with a letter or _)")
        elif check_expression_string(expr, path, out, "the answer"):
            _root_reads(expr, path, (*ROOT_FIELDS, "query"), out)


def _check_header(document: dict[str, Any], out: Problems) -> None:
    fmt = document.get("orbit")
    if "orbit" not in document:
        out.add("orbit", f"required: the format version, `orbit: {FORMAT}`")
    elif isinstance(fmt, bool) or fmt != FORMAT:
        out.add("orbit", f"unsupported format {fmt!r}: this engine reads `orbit: {FORMAT}`")
    name = document.get("name")
    if "name" not in document:
        out.add("name", "required: the workflow name")
    elif not isinstance(name, str) or not NAME.fullmatch(name):
        out.add("name", f"must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or "
                        f"digit, not {name!r}")
    if "version" in document:
        version = document["version"]
        if isinstance(version, bool) or not isinstance(version, (str, int)) \
                or not VERSION.fullmatch(str(version)):
            out.add("version", "must be a short string like \"3\" or \"2024-06\" "
                               f"(in YAML quote numbers like '1.10'), not {version!r}")
    if "timeout" in document:
        check_duration(document["timeout"], "timeout", out)
    if "retention" in document:
        ms = check_duration(document["retention"], "retention", out)
        problem = retention_problem(ms) if ms is not None else None
        if problem:
            out.add("retention", problem)
    if "description" in document and not isinstance(document["description"], str):
        out.add("description", f"must be a string, not {type_name(document['description'])}")


def _check_defaults(defaults: Any, present: bool, out: Problems) -> None:
    if not present:
        return
    if not isinstance(defaults, dict):
        out.add("defaults", f"must be a mapping ({', '.join(DEFAULTS_KEYS)}), not {type_name(defaults)}")
        return
    check_keys(defaults, DEFAULTS_KEYS, "defaults", out, "defaults")
    if "retry" in defaults:
        check_retry(defaults["retry"], "defaults.retry", out)
    for key in ("timeout", "queue_timeout", "heartbeat_timeout"):
        if key in defaults:
            check_duration(defaults[key], f"defaults.{key}", out)


def _check_signals(signals: Any, present: bool, out: Problems) -> None:
    if not present:
        return
    if not isinstance(signals, dict):
        out.add("signals", f"must be a mapping of signal names to {{schema}}, not {type_name(signals)}")
        return
    for name, body in signals.items():
        path = join("signals", name)
        if not isinstance(name, str) or not name:
            continue  # check_json reported the key
        if body is None:
            continue
        if not isinstance(body, dict):
            out.add(path, f"must be a mapping like {{schema: ...}}, not {type_name(body)}")
            continue
        check_keys(body, SIGNAL_KEYS, path, out, "a signal")
        if "schema" in body:
            check_schema_doc(body["schema"], join(path, "schema"), out)


def _check_steps(steps: dict[Any, Any], out: Problems, prefix: str = "steps") -> None:
    """One step graph: the main flow's (`steps`) or an on_signal handler's (`prefix`)."""
    names = {name for name in steps if isinstance(name, str)}
    graph: dict[str, frozenset[str]] = {}
    for name, body in steps.items():
        if not isinstance(name, str):
            continue  # check_json reported the key
        path = join(prefix, name)
        if not STEP_NAME.fullmatch(name):
            out.add(path, "a step name is 1-80 letters, digits, '_' or '-', starting with a letter or '_'")
        check_step(name, body, path, out)
        if not isinstance(body, dict):
            continue
        deps: set[str] = set()
        after = body.get("after")
        for index, dep in enumerate(after if isinstance(after, list) else []):
            if not isinstance(dep, str):
                continue
            where = f"{path}.after[{index}]"
            if dep == name:
                out.add(where, "a step cannot depend on itself")
            elif dep not in names:
                out.add(where, f"unknown step {dep!r}{suggest(dep, names)}")
            else:
                deps.add(dep)
        for key in ORDERING_KEYS:
            if key in body:
                _check_reads(body[key], join(path, key), names, name, out, ordering=True)
        sleep = body.get("sleep")
        if isinstance(sleep, dict) and "until" in sleep:
            _check_reads(sleep["until"], f"{path}.sleep.until", names, name, out, ordering=True)
        compensate = body.get("compensate")
        if isinstance(compensate, dict):
            for key in ("input", "http"):
                if key in compensate:
                    _check_reads(compensate[key], f"{path}.compensate.{key}", names, None, out,
                                 ordering=False)
        deps |= (step_reads(body) & names) - {name}
        graph[name] = frozenset(set(step_after(body)) & names - {name} | deps)
    for cycle in find_cycles(graph):
        out.add(join(prefix, cycle[0]), "dependency cycle (each step waits for the next, through "
                "after and steps.NAME reads): " + " -> ".join(cycle))


class _GraphChecks:
    """The step-graph checks `handlers.check_handlers` runs on each handler's steps and output."""

    def graph(self, steps: dict[Any, Any], prefix: str, roots: tuple[str, ...], out: Problems) -> None:
        _check_steps(steps, out, prefix)
        _check_step_roots(steps, prefix, roots, out)

    def output(self, template: Any, path: str, names: set[str], roots: tuple[str, ...],
               out: Problems) -> None:
        check_template(template, path, out)
        _check_reads(template, path, names, None, out, ordering=False)
        _root_reads(template, path, roots, out)


def _check_roots(document: dict[str, Any], out: Problems) -> None:
    """Expressions read only what the root has (docs/definitions.md, "Expressions"); ``item`` and
    ``index`` only where a ``for`` step evaluates per element."""
    _check_step_roots(document.get("steps"), "steps", ROOT_FIELDS, out)
    if "output" in document:
        _root_reads(document["output"], "output", ROOT_FIELDS, out)


def _check_step_roots(steps: Any, prefix: str, roots: tuple[str, ...], out: Problems) -> None:
    for name, body in (steps.items() if isinstance(steps, dict) else ()):
        if not isinstance(body, dict):
            continue
        path = join(prefix, name)
        per_element = roots + ELEMENT_FIELDS if "for" in body else roots
        for key in ("when", "for"):  # evaluated once, before any element exists
            if key in body:
                _root_reads(body[key], join(path, key), roots, out)
        for key in ("input", "http", "compute", "sleep"):
            if key in body:
                _root_reads(body[key], join(path, key), per_element, out)
        if isinstance(body.get("compensate"), dict):
            _root_reads(body["compensate"], join(path, "compensate"), per_element, out)


def _root_reads(template: Any, path: str, allowed: tuple[str, ...], out: Problems) -> None:
    for leaf_path, text in expressions.expressions_in(template, path):
        for name in sorted(expressions.root_names(text) - set(allowed)):
            if name in ELEMENT_FIELDS:
                out.add(leaf_path, f"reads `{name}`, which exists only per element of a `for` step "
                                   "(in its input, http, compute, sleep and compensate)")
            else:
                out.add(leaf_path, f"reads `{name}`, which is not in the expression root "
                                   f"({', '.join(allowed)}){suggest(name, allowed)}")


def _check_hooks(document: dict[str, Any], out: Problems) -> None:
    """``hooks.NAME.token`` exists only for declared signals, ``wait_for`` steps and handlers."""
    steps = document.get("steps")
    signals = document.get("signals")
    known = {name for name in signals if isinstance(name, str)} if isinstance(signals, dict) else set()
    handlers = document.get("on_signal")
    known |= {name for name in handlers if isinstance(name, str)} if isinstance(handlers, dict) else set()
    if isinstance(steps, dict):
        known |= {body["wait_for"] for body in steps.values()
                  if isinstance(body, dict) and isinstance(body.get("wait_for"), str)}
    for leaf_path, text in expressions.expressions_in(document):
        names, _ = expressions.expression_references(text, "hooks")
        for name in sorted(names - known):
            out.add(leaf_path, f"reads hooks.{name}, but no signal or wait_for step is named "
                               f"{name!r}{suggest(name, known)}")


def _check_reads(template: Any, path: str, names: set[str], own: str | None, out: Problems,
                 ordering: bool) -> None:
    """Every ``steps.NAME`` an expression reads must exist; ordering expressions may not
    read their own step or read ``steps`` without naming a step."""
    for leaf_path, text in expressions.expressions_in(template, path):
        refs, dynamic = expressions.expression_references(text)
        for ref in sorted(refs):
            if ref == own:
                out.add(leaf_path, f"reads steps.{ref}, its own step: a step cannot depend on itself")
            elif ref not in names:
                out.add(leaf_path, f"reads unknown step {ref!r}{suggest(ref, names)}")
        if dynamic and ordering:
            out.add(leaf_path, "reads `steps` without naming a step (e.g. steps.* or $lookup(steps, x)); "
                               "name each step (steps.NAME) so the step waits for it, or use `after`")


def _desc(value: Any) -> str:
    if isinstance(value, dict) and not value:
        return "an empty mapping"
    return type_name(value)
