"""Build the frozen :class:`Definition` from a document that passed validation."""

from __future__ import annotations

import copy
from typing import Any

from orbit.core.definition.durations import parse_duration
from orbit.core.definition.expressions import references
from orbit.core.definition.graph import step_after, step_reads
from orbit.core.definition.handlers import build_handlers
from orbit.core.definition.hashing import definition_hash
from orbit.core.definition.inline import inline_semantics
from orbit.core.definition.model import COMPENSATE_KINDS, STEP_KINDS, Definition, RetryPolicy, Signal, Step
from orbit.core.definition.validate import validate_definition
from orbit.errors import Problem, ValidationError

DEFAULT_VERSION = "1"
# Only attempt-style steps inherit `defaults.timeout`: a 30s default must not end a
# 7-day wait_for or a child workflow that has its own timeout.
TIMEOUT_DEFAULT_KINDS = ("task", "http")
RETRY_KINDS = ("task", "http")


class DefinitionError(ValidationError):
    """A :class:`ValidationError` for a definition that knows where it came from (a file)."""

    def __init__(self, problems: list[Problem], source: str | None = None) -> None:
        self.source = source
        super().__init__(problems)

    def __str__(self) -> str:
        prefix = f"{self.source}: " if self.source else ""
        return "; ".join(prefix + str(p) for p in self.problems) or f"{prefix}invalid definition"


def parse_definition(document: Any, source: str | None = None, stored: bool = False) -> Definition:
    """Validate and build; raise :class:`DefinitionError` (a ``ValidationError``) listing
    every problem. ``source`` (a file name) is only used in messages. ``stored``: a registered
    definition read back (`validate_definition`: a rule added since never strands it)."""
    problems = validate_definition(document, stored=stored)
    if problems:
        raise DefinitionError(problems, source)
    raw = copy.deepcopy(document)
    return build(raw)


def build(raw: dict[str, Any]) -> Definition:
    defaults = raw.get("defaults") or {}
    default_retry = defaults.get("retry") or {}
    steps = {name: _step(name, body, defaults, default_retry) for name, body in raw["steps"].items()}
    signals = {name: Signal(schema=(body or {}).get("schema"))
               for name, body in (raw.get("signals") or {}).items()}
    timeout = raw.get("timeout")
    retention = raw.get("retention")
    return Definition(
        name=raw["name"],
        version=str(raw.get("version", DEFAULT_VERSION)),
        timeout_ms=parse_duration(timeout) if timeout is not None else None,
        input_schema=raw.get("input"),
        output=raw.get("output"),
        output_schema=raw.get("output_schema"),
        signals=signals,
        steps=steps,
        defaults=defaults,
        hash=definition_hash(raw),
        raw=raw,
        retention_ms=parse_duration(retention) if retention is not None else None,
        attributes=raw.get("attributes") or None,
        handlers=build_handlers(raw, lambda name, body: _step(name, body, defaults, default_retry)),
        tasks=dict(raw.get("tasks") or {}),
    )


def _step(name: str, body: dict[str, Any], defaults: dict[str, Any], default_retry: dict[str, Any]) -> Step:
    kind = next(k for k in STEP_KINDS if k in body)
    fields = _body_fields(kind, body, defaults, default_retry)
    after = step_after(body)
    sleep = body.get("sleep")
    compensate = body.get("compensate")
    return Step(
        name=name,
        after=after,
        depends_on=frozenset(after) | frozenset(step_reads(body)),
        when=body.get("when"),
        for_each=body.get("for"),
        concurrency=body.get("concurrency"),
        tolerated_failures=body.get("tolerated_failures", 0),
        sleep_ms=parse_duration(sleep) if kind == "sleep" and not isinstance(sleep, dict) else None,
        sleep_until=sleep["until"] if kind == "sleep" and isinstance(sleep, dict) else None,
        wait_for=body.get("wait_for"),
        compute=body.get("compute"),
        on_failure=body.get("on_failure", "fail"),
        compensate=_compensate(name, compensate, defaults, default_retry) if compensate else None,
        **fields,
    )


def _compensate(owner: str, body: dict[str, Any], defaults: dict[str, Any],
                default_retry: dict[str, Any]) -> Step:
    kind = next(k for k in COMPENSATE_KINDS if k in body)
    fields = _body_fields(kind, body, defaults, default_retry)
    reads: frozenset[str] = frozenset()
    for key in ("input", "http"):
        if key in body:
            reads |= references(body[key])
    return Step(name=f"compensate:{owner}", depends_on=reads, **fields)


def _body_fields(kind: str, body: dict[str, Any], defaults: dict[str, Any],
                 default_retry: dict[str, Any]) -> dict[str, Any]:
    """Fields shared by steps and compensate bodies: kind, target, input, retry, timeouts."""
    timeout = body.get("timeout")
    http = body.get("http") if kind == "http" else None
    if isinstance(http, dict):
        http = {**http, "method": str(http["method"]).upper()}  # validated: a known method, any case
    if timeout is None and isinstance(http, dict):
        timeout = http.get("timeout")
    if timeout is None and kind in TIMEOUT_DEFAULT_KINDS:
        timeout = defaults.get("timeout")
    queue_timeout = body.get("queue_timeout")
    if queue_timeout is None and kind in ("task", "http"):
        queue_timeout = defaults.get("queue_timeout")
    heartbeat_timeout = body.get("heartbeat_timeout")
    if heartbeat_timeout is None and kind == "task":  # only a worker task can heartbeat
        heartbeat_timeout = defaults.get("heartbeat_timeout")
    return {
        "kind": kind,
        "task": body.get("task") if kind == "task" else None,
        "queue": body.get("queue"),
        "workflow": body.get("workflow") if kind == "workflow" else None,
        "http": http,
        "input": body.get("input"),
        # Only kinds that can be retried get a policy; a wait_for timing out is not re-waited.
        "retry": _retry({**default_retry, **(body.get("retry") or {})}) if kind in RETRY_KINDS
        else RetryPolicy(),
        "timeout_ms": parse_duration(timeout) if timeout is not None else None,
        "queue_timeout_ms": parse_duration(queue_timeout) if queue_timeout is not None else None,
        "heartbeat_timeout_ms": parse_duration(heartbeat_timeout) if heartbeat_timeout is not None else None,
        "inline": inline_semantics(body) if kind == "task" else None,
        # None (the default, `wait`): the task waits in its queue until a worker serves it
        "on_missing_worker": "fail" if kind == "task" and body.get("on_missing_worker") == "fail" else None,
        "flow": body.get("flow") if kind == "task" else None,  # {key, priority} (core/flow/calls.py)
    }


def _retry(spec: dict[str, Any]) -> RetryPolicy:
    base = RetryPolicy()
    return RetryPolicy(
        max_attempts=spec.get("max_attempts", base.max_attempts),
        backoff_ms=parse_duration(spec["backoff"]) if "backoff" in spec else base.backoff_ms,
        multiplier=float(spec.get("multiplier", base.multiplier)),
        max_backoff_ms=parse_duration(spec["max_backoff"]) if "max_backoff" in spec else None,
        jitter=spec.get("jitter", base.jitter),
        non_retryable=tuple(spec.get("non_retryable", ())),
        retry_on=tuple(spec.get("retry_on", ())),
    )
