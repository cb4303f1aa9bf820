"""Flow-control declarations (docs/flow-control.md): concurrency and rate limits per key, priority,
fairness weights. One parser for a definition's keys and `@orbit.workflow(...)`'s arguments.

    concurrency: {limit: N, key: EXPR, fairness: {key: EXPR, weights: {KEY: W}}}   executions
    rate: {limit: R, period: 1s, burst: B, key: EXPR, on_exceed: wait | drop}        starts
    priority: 1..5 or EXPR                                                          starts
    tasks: {TASK: {concurrency: ..., rate: {... on_exceed: wait | fail}, priority: ...}}  attempts
    queues: {QUEUE: {concurrency: N}}                                               attempts per queue

An EXPR is a JSONata template (`{% input.customer %}`) over `{"input": <the start's or the
task's input>}`, or in a code workflow a function of the input. Every problem is one line naming
its path (`tasks.charge.rate.period: ...`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orbit.core.definition.durations import parse_duration
from orbit.errors import Problem

MAX_LIMIT = 100_000
MAX_WEIGHT = 1_000
MAX_WEIGHTS = 1_000
PRIORITIES = (1, 2, 3, 4, 5)
DEFAULT_PRIORITY = 3
MIN_PERIOD_MS = 1
MAX_PERIOD_MS = 86_400_000
CONCURRENCY_KEYS = ("limit", "key", "fairness")
FAIRNESS_KEYS = ("key", "weights")
RATE_KEYS = ("limit", "period", "burst", "key", "on_exceed")
TASK_FLOW_KEYS = ("concurrency", "rate", "priority")
START_POLICIES = ("wait", "drop")
STEP_POLICIES = ("wait", "fail")


@dataclass(frozen=True)
class Concurrency:
    limit: int
    key: Any = None  # template or callable; None: one counter for all
    fairness_key: Any = None  # template or callable; None: FIFO (within a priority)
    weights: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Rate:
    limit: int  # tokens per period
    period_ms: int
    burst: int
    key: Any = None
    on_exceed: str = "wait"


@dataclass(frozen=True)
class Gates:
    """What one start (a workflow's) or one attempt (a task's) passes before it runs."""

    concurrency: Concurrency | None = None
    rate: Rate | None = None
    priority: Any = None  # int 1..5, template or callable; None: DEFAULT_PRIORITY

    @property
    def empty(self) -> bool:
        return self.concurrency is None and self.rate is None


@dataclass(frozen=True)
class FlowSpec:
    workflow: Gates = field(default_factory=Gates)
    tasks: dict[str, Gates] = field(default_factory=dict)
    queues: dict[str, int] = field(default_factory=dict)  # queue -> global concurrency limit

    @property
    def empty(self) -> bool:
        return self.workflow.empty and not self.tasks and not self.queues


NO_FLOW = FlowSpec()


class _Out:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))


def _kind(v: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "a mapping", type(None): "null"}.get(type(v), type(v).__name__)


def _int(v: Any, low: int, high: int, path: str, out: _Out) -> int | None:
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        out.add(path, f"must be a whole number {low}..{high}, not {v!r}"[:300])
        return None
    return v


def _keys(body: dict[str, Any], allowed: tuple[str, ...], path: str, out: _Out) -> None:
    for k in body:
        if k not in allowed:
            out.add(f"{path}.{k}", f"unknown key (allowed: {', '.join(allowed)})")


def _expr(v: Any, path: str, out: _Out, code: bool) -> Any:
    """A key or priority expression: a `{% %}` template (checked now), or a callable in code."""
    if v is None:
        return None
    if callable(v) and code:
        return v
    if not isinstance(v, str) or not v.strip():
        want = "a function of the input or a JSONata template" if code else "a JSONata template"
        out.add(path, f"must be {want} like '{{% input.customer %}}', not {_kind(v)}")
        return None
    from orbit.core.definition.expressions import is_expression, parse_expression
    from orbit.errors import ExpressionError

    if not is_expression(v):
        out.add(path, f"must be a template '{{% ... %}}' over the input, not the constant {v!r}"[:300])
        return None
    try:
        parse_expression(v)
    except ExpressionError as e:
        out.add(path, f"invalid expression: {e}"[:300])
        return None
    return v


def _concurrency(body: Any, path: str, out: _Out, code: bool) -> Concurrency | None:
    if isinstance(body, int) and not isinstance(body, bool):
        body = {"limit": body}
    if not isinstance(body, dict):
        out.add(path, f"must be a mapping {{limit, key, fairness}} or a number, not {_kind(body)}")
        return None
    _keys(body, CONCURRENCY_KEYS, path, out)
    if "limit" not in body:
        out.add(f"{path}.limit", "required: how many may hold a slot at once")
        return None
    limit = _int(body["limit"], 1, MAX_LIMIT, f"{path}.limit", out)
    key = _expr(body.get("key"), f"{path}.key", out, code)
    fair_key, weights = None, {}
    fair = body.get("fairness")
    if fair is not None:
        if not isinstance(fair, dict):
            out.add(f"{path}.fairness", f"must be a mapping {{key, weights}}, not {_kind(fair)}")
        else:
            _keys(fair, FAIRNESS_KEYS, f"{path}.fairness", out)
            if "key" not in fair:
                out.add(f"{path}.fairness.key", "required: the tenant of each waiting item")
            fair_key = _expr(fair.get("key"), f"{path}.fairness.key", out, code)
            raw = fair.get("weights") or {}
            if not isinstance(raw, dict) or len(raw) > MAX_WEIGHTS:
                out.add(f"{path}.fairness.weights",
                        f"must be a mapping of at most {MAX_WEIGHTS} keys to weights")
            else:
                for k, w in raw.items():
                    ok = _int(w, 1, MAX_WEIGHT, f"{path}.fairness.weights.{k}", out)
                    if ok is not None:
                        weights[str(k)] = ok
    if limit is None:
        return None
    return Concurrency(limit, key, fair_key, weights)


def _rate(body: Any, path: str, out: _Out, code: bool, policies: tuple[str, ...]) -> Rate | None:
    if not isinstance(body, dict):
        out.add(path, f"must be a mapping {{limit, period, burst, key, on_exceed}}, not {_kind(body)}")
        return None
    _keys(body, RATE_KEYS, path, out)
    if "limit" not in body:
        out.add(f"{path}.limit", "required: how many per period")
        return None
    limit = _int(body["limit"], 1, MAX_LIMIT, f"{path}.limit", out)
    period_ms: int | None = None
    try:
        period_ms = parse_duration(body.get("period", "1s"))
        if not MIN_PERIOD_MS <= period_ms <= MAX_PERIOD_MS:
            out.add(f"{path}.period", f"must be between 1ms and 1d, not {body.get('period')!r}")
            period_ms = None
    except ValueError as e:
        out.add(f"{path}.period", str(e)[:300])
    burst = _int(body.get("burst", limit or 1), 1, MAX_LIMIT, f"{path}.burst", out)
    key = _expr(body.get("key"), f"{path}.key", out, code)
    policy = body.get("on_exceed", "wait")
    if policy not in policies:
        out.add(f"{path}.on_exceed", f"must be one of {', '.join(policies)}, not {policy!r}"[:300])
        return None
    if limit is None or period_ms is None or burst is None:
        return None
    return Rate(limit, period_ms, burst, key, policy)


def _priority(v: Any, path: str, out: _Out, code: bool) -> Any:
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return _int(v, 1, 5, path, out)
    return _expr(v, path, out, code)


def _gates(body: dict[str, Any], path: str, out: _Out, code: bool, policies: tuple[str, ...]) -> Gates:
    p = f"{path}." if path else ""
    conc = _concurrency(body["concurrency"], f"{p}concurrency", out, code) if "concurrency" in body else None
    rate = _rate(body["rate"], f"{p}rate", out, code, policies) if "rate" in body else None
    return Gates(conc, rate, _priority(body.get("priority"), f"{p}priority", out, code))


def parse_flow(workflow: dict[str, Any], tasks: Any, queues: Any,
               code: bool = False) -> tuple[FlowSpec, list[Problem]]:
    """The FlowSpec of a definition's (or code workflow's) `concurrency`, `rate`, `priority`, the
    flow keys of each `tasks:` entry and `queues:`; with every problem found (empty: valid)."""
    out = _Out()
    wf = _gates(workflow, "", out, code, START_POLICIES)
    task_gates: dict[str, Gates] = {}
    for name, body in (tasks.items() if isinstance(tasks, dict) else ()):
        if isinstance(body, dict) and any(k in body for k in TASK_FLOW_KEYS):
            g = _gates(body, f"tasks.{name}", out, code, STEP_POLICIES)
            if not g.empty or g.priority is not None:
                task_gates[str(name)] = g
    queue_limits: dict[str, int] = {}
    if queues is not None:
        if not isinstance(queues, dict):
            out.add("queues", f"must be a mapping of queue names to {{concurrency: N}}, not {_kind(queues)}")
        else:
            for q, body in queues.items():
                if not isinstance(body, dict) or set(body) != {"concurrency"}:
                    out.add(f"queues.{q}", "must be {concurrency: N}: the most attempts running at once")
                    continue
                n = _int(body["concurrency"], 1, MAX_LIMIT, f"queues.{q}.concurrency", out)
                if n is not None:
                    queue_limits[str(q)] = n
    return FlowSpec(wf, task_gates, queue_limits), out.problems


def flow_of(workflow: Any) -> FlowSpec:
    """The workflow object's FlowSpec (a parsed Definition or a CodeWorkflow), NO_FLOW without."""
    spec = getattr(workflow, "flow", None)
    if isinstance(spec, FlowSpec):
        return spec
    raw = getattr(workflow, "raw", None)
    if isinstance(raw, dict):
        spec, _ = parse_flow(raw, raw.get("tasks"), raw.get("queues"))
        return spec
    return NO_FLOW
