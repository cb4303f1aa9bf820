"""Task and queue limits shared by every workflow (docs/flow-control.md, section 2;
docs/decisions/flow3-task-limits.md).

A definition's `tasks: {T: {concurrency, rate, priority}}` and `queues: {Q: {concurrency: N}}`
are recorded, at registration, in one registry of the deployment (the Orbit table), one entry
per limit (`task:T`, `queue:Q`). Every dispatch of T, from any workflow (a definition or code),
passes that entry's gates; a workflow's own declaration of a field wins for its own dispatches.

An entry is merged field by field and never loses a field, and the key a field counts by is fixed
by its first declaration (`ck`, `rk`: the key expression's text): so an attempt's slot is taken and
given back under the same counter whatever registration happened in between. A declaration with
another key is refused at registration, naming its path.

Pure: what the registry stores and how it combines with a workflow's own FlowSpec.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from orbit.core.flow.spec import TASK_FLOW_KEYS, FlowSpec, Gates, parse_flow
from orbit.errors import Problem

FIELDS = TASK_FLOW_KEYS  # concurrency, rate, priority
KEYED = (("concurrency", "ck"), ("rate", "rk"))  # the fields whose key is fixed once declared


def _key_text(body: Any) -> str:
    """The key expression of a concurrency or rate body, as text ("" when it has none)."""
    key = body.get("key") if isinstance(body, dict) else None
    return "" if key is None else json.dumps(key, sort_keys=True)


def declared(raw: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The shared entries a definition's raw mapping declares: `task:T` -> {field: raw value, ck?,
    rk?}, `queue:Q` -> {concurrency: N, ck: ""}. Only limits with a flow key (a task entry of a
    `tasks:` mapping without one is a contract, not a limit)."""
    out: dict[str, dict[str, Any]] = {}
    tasks = raw.get("tasks")
    for task, body in (tasks.items() if isinstance(tasks, dict) else ()):
        if not isinstance(body, dict):
            continue
        entry = {f: body[f] for f in FIELDS if f in body}
        if not entry:
            continue
        for f, k in KEYED:
            if f in entry:
                entry[k] = _key_text(entry[f])
        out[f"task:{task}"] = entry
    queues = raw.get("queues")
    for queue, body in (queues.items() if isinstance(queues, dict) else ()):
        if isinstance(body, dict) and "concurrency" in body:
            out[f"queue:{queue}"] = {"concurrency": body["concurrency"], "ck": ""}
    return out


def path_of(name: str, field: str) -> str:
    kind, _, rest = name.partition(":")
    return f"{kind}s.{rest}.{field}" + (".key" if kind == "task" else "")


def conflict(name: str, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> Problem | None:
    """The problem with merging `new` into the stored entry `old` (a key that differs from the one
    the field was first declared with), or None."""
    if not old:
        return None
    for field, k in KEYED:
        if k in new and k in old and new[k] != old[k]:
            have = json.loads(old[k]) if old[k] else None
            want = json.loads(new[k]) if new[k] else None
            by = f" (declared by {old['from']})" if old.get("from") else ""
            return Problem(path_of(name, field), (
                f"{name} has a shared {field} limit keyed by {have!r}{by}; a declaration keyed by "
                f"{want!r} would count the same attempts on other counters: use the same key, or a "
                "per-call key (docs/flow-control.md)")[:400])
    return None


def merged(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    """`old` with every field `new` declares replaced (a field `new` leaves out stays)."""
    return {**(old or {}), **new}


def shared_spec(entries: Mapping[str, Mapping[str, Any]]) -> FlowSpec:
    """The FlowSpec of the registry's entries (checked when they were declared: a problem now
    leaves that field out rather than failing a dispatch)."""
    tasks: dict[str, Any] = {}
    queues: dict[str, Any] = {}
    for name, entry in entries.items():
        kind, _, rest = name.partition(":")
        body = {f: entry[f] for f in FIELDS if f in entry}
        if kind == "task" and body:
            tasks[rest] = body
        elif kind == "queue" and "concurrency" in body:
            queues[rest] = {"concurrency": body["concurrency"]}
    spec, _ = parse_flow({}, tasks, queues)
    return spec


def _gates(own: Gates | None, shared: Gates | None) -> Gates:
    if own is None:
        return shared or Gates()
    if shared is None:
        return own
    return Gates(own.concurrency or shared.concurrency, own.rate or shared.rate,
                 own.priority if own.priority is not None else shared.priority)


def effective(own: FlowSpec, shared: FlowSpec) -> FlowSpec:
    """A workflow's FlowSpec with the shared task and queue limits: its own fields first."""
    if not shared.tasks and not shared.queues:
        return own
    tasks = {t: _gates(own.tasks.get(t), shared.tasks.get(t)) for t in {*own.tasks, *shared.tasks}}
    return FlowSpec(own.workflow, {t: g for t, g in tasks.items() if not g.empty or g.priority is not None},
                    {**shared.queues, **own.queues})


def declare_into(entries: dict[str, dict[str, Any]], raw: Mapping[str, Any], source: str,
                 at_ms: int = 0) -> None:
    """Merge a definition's declarations into `entries` (an in-memory registry), all or none:
    ValidationError naming every path whose key differs from the registry's."""
    from orbit.errors import ValidationError

    new = declared(raw)
    problems = [p for name, e in new.items() if (p := conflict(name, entries.get(name), e)) is not None]
    if problems:
        raise ValidationError(problems)
    for name, e in new.items():
        old = entries.get(name)
        entries[name] = {**merged(old, e), "from": source, "at": old.get("at", at_ms) if old else at_ms}
