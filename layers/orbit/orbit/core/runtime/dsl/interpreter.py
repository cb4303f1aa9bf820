"""The definition interpreter: a `Definition` and the state -> commands.

Pure and idempotent (see `orbit.core.runtime.commands`): each call looks at the
definition's top-level steps (never at all `for` elements: fan-out progress
comes from the `state.fanouts` counters) and returns what should happen next.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from orbit.core.flow.calls import step_flow_values
from orbit.core.history.events import (
    EXPRESSION_ERROR,
    INPUT_CONTRACT_VIOLATION,
    OUTPUT_CONTRACT_VIOLATION,
    TaskError,
)
from orbit.core.history.hook_tokens import KeySource, tokens_view
from orbit.core.history.state import (
    COMPENSATING,
    PENDING,
    RUNNING,
    TERMINAL_UNIT,
    ExecutionState,
    compensation_key,
    parse_key,
)
from orbit.core.runtime.commands import (
    CONTINUE_WORKFLOW,
    FAIL_RUN,
    MAX_FOR_ITEMS,
    Command,
    Complete,
    CreateHook,
    Fail,
    FailStep,
    FanOut,
    LinkChild,
    RecordResult,
    RetryPolicy,
    ScheduleStep,
    SkipStep,
    StepCommand,
    WaitForSignal,
    WaitUntil,
    storable,
    too_many_items,
)
from orbit.core.runtime.dsl.attributes import attribute_commands
from orbit.core.runtime.dsl.plan import Plan
from orbit.errors import ExpressionError

FANOUT_ROUND = 1000
HTTP_TASK = "orbit.http"
HTTP_QUEUE = "http"


def iso(ms: int) -> str:
    return (
        datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def default_queue(task: str) -> str:
    """A task's queue is its name up to the first "." (`inventory.reserve` -> `inventory`)."""
    return task.split(".", 1)[0]


def _evaluate(template: Any, root: dict[str, Any], now_ms: int, meter: Any = None) -> Any:
    from orbit.core.definition.expressions import evaluate

    return evaluate(template, root, now_ms, meter)


def _expression_error(unit: str, what: str, e: Exception) -> TaskError:
    return TaskError(EXPRESSION_ERROR, f"{unit}.{what}: {e}", retryable=False)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    names: dict[type, str] = {str: "a string", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def _preview(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


class DslRuntime:
    """`Runtime` for DSL definitions. One instance serves one decision's rounds (the decider asks
    for a runtime per decision); it carries a `Plan` from round to round."""

    run_class: type[_Run]  # set below the class: `_Run` (runtime.dsl.handlers subclasses both)

    def __init__(self, keys: KeySource | None = None, meter: Any = None) -> None:
        """`keys`: the stack key's source (`hooks.NAME.token`); `meter`: the decision's
        `expressions.Meter` (the steps its expressions spend)."""
        self._plan: Plan | None = None
        self.keys, self.meter = keys, meter

    def run(self, defn: Any, state: ExecutionState, now_ms: int) -> list[Command]:
        plan = self._plan
        if plan is None or plan.defn is not defn or plan.state is not state:
            plan = self._plan = Plan(defn, state)
        return self.run_class(defn, state, now_ms, plan, self.keys, self.meter).commands()


class _Run:
    def __init__(self, defn: Any, state: ExecutionState, now_ms: int, plan: Plan | None = None,
                 keys: KeySource | None = None, meter: Any = None) -> None:
        self.d, self.s, self.now = defn, state, now_ms
        self.keys, self.meter = keys, meter
        self.plan = plan if plan is not None else Plan(defn, state)
        self._steps_root: dict[str, Any] | None = None

    # -- the expression root (docs/definitions.md, "Expressions") --
    def _step_view(self, name: str) -> dict[str, Any] | None:
        u = self.s.units.get(name)
        if u is None:
            return None
        return {"output": u.output, "status": u.status, "error": u.error.to_dict() if u.error else None}

    def root(self, only: frozenset[str] | None = None, **extra: Any) -> dict[str, Any]:
        """The root; with `only`, `steps` holds just those steps (a starting step's expressions
        read only steps it depends on: validation refuses any other read), which keeps one step's
        start from costing the size of the definition."""
        if only is not None:
            steps = {n: v for n in sorted(only) if (v := self._step_view(n)) is not None}
        else:
            if self._steps_root is None:
                self._steps_root = {n: v for n in self.d.steps if (v := self._step_view(n)) is not None}
            steps = self._steps_root
        r = {
            "input": self.s.input,
            "steps": steps,
            "execution": {"id": self.s.id, "started_at": iso(self.s.created_at_ms)},
            "hooks": tokens_view(self.s.id, self.s.hooks, self.keys),
        }
        r.update(extra)
        return r

    def commands(self) -> list[Command]:
        s = self.s
        if s.status == COMPENSATING:
            return self.compensation()
        if s.abort is not None or s.terminal:
            return []
        plan = self.plan
        out: list[Command] = [CreateHook(n) for n in plan.hooks if n not in s.hooks]
        if not s.units:
            err = self.contract(getattr(self.d, "input_schema", None), s.input, INPUT_CONTRACT_VIOLATION,
                                "input")
            if err is not None:
                return [Fail(err)]
        if out:  # hooks first (same events, same order): this round's steps may read hooks.NAME.token
            return out
        for name in plan.candidates():
            step = self.d.steps[name]
            u = s.units.get(name)
            if u is None or u.status == PENDING:
                blocker = next((d for d in step.depends_on if s.status_of(d) not in TERMINAL_UNIT), None)
                if blocker is not None:
                    plan.waiting.setdefault(blocker, []).append(name)
                    continue
                out.extend(self.begin(step))
                plan.watch.add(name)
            elif u.status == RUNNING and name in s.fanouts:
                out.extend(self.fan_out_progress(step))
                plan.watch.add(name)
            elif u.status not in TERMINAL_UNIT:
                plan.watch.add(name)
            else:
                plan.ended.add(name)
                plan.open.update(plan.waiting.pop(name, ()))
        return self.after_main(out, len(plan.ended) == len(self.d.steps) and not out)

    def after_main(self, out: list[Command], main_done: bool) -> list[Command]:
        """The round's commands once the main flow's are known (`runtime.dsl.handlers` adds the
        on_signal instances here); `main_done`: every step has ended and nothing else is to do."""
        if main_done:
            out.append(self.finish())
        if getattr(self.d, "attributes", None):  # first: the final values are set before the end
            return attribute_commands(self.d.attributes, self.root(), self.now, self.meter) + out
        return out

    def hook_names(self) -> list[str]:
        return self.plan.hooks

    @staticmethod
    def contract(schema: Any, value: Any, code: str, schema_path: str) -> TaskError | None:
        if schema is None:
            return None
        from orbit.core.definition.contracts import check_schema

        return check_schema(schema, value, code, schema_path=schema_path)

    # -- one step becoming ready --
    def begin(self, step: Any) -> list[Command]:
        name = step.name
        continue_ = step.on_failure == "continue"
        root = self.root(only=step.depends_on)
        try:
            if step.when is not None and not _evaluate(step.when, root, self.now, self.meter):
                return [SkipStep(name, "`when` is false")]
        except ExpressionError as e:
            return [FailStep(name, _expression_error(name, "when", e), continue_)]
        if step.for_each is not None:
            try:
                items = _evaluate(step.for_each, root, self.now, self.meter)
            except ExpressionError as e:
                return [FailStep(name, _expression_error(name, "for", e), continue_)]
            if not isinstance(items, list):
                # Running once over a string, or over nothing for a missing path, would hide the mistake.
                got = "null (a missing path?)" if items is None else f"{_json_type(items)} {_preview(items)}"
                msg = (f"must give an array, but gave {got}; wrap a path that may give one value "
                       "in brackets, e.g. [input.items]")
                return [FailStep(name, _expression_error(name, "for", ValueError(msg)), continue_)]
            if len(items) > MAX_FOR_ITEMS:
                return [FailStep(name, too_many_items(name, "for", len(items)), continue_)]
            return [FanOut(name, items)]
        return self.unit_commands(
            step,
            name,
            root,
            FAIL_RUN if not continue_ else CONTINUE_WORKFLOW,
            compensable=step.compensate is not None,
        )

    def unit_commands(
        self, step: Any, unit: str, root: dict[str, Any], on_exhausted: str, compensable: bool = False
    ) -> list[Command]:
        """The command that runs one unit of `step` (a whole step, an element or a compensation)."""
        continue_ = on_exhausted == CONTINUE_WORKFLOW
        kind = step.kind
        try:
            if kind == "task":
                task = step.task
                flow_key, priority = step_flow_values(
                    getattr(step, "flow", None), lambda t: _evaluate(t, root, self.now, self.meter))
                return [
                    ScheduleStep(
                        StepCommand(
                            unit,
                            task,
                            "" if getattr(step, "inline", None) else step.queue or default_queue(task),
                            _evaluate(step.input, root, self.now, self.meter),
                            "task",
                            RetryPolicy.of(step.retry),
                            step.timeout_ms,
                            step.queue_timeout_ms,
                            on_exhausted,
                            compensable,
                            step.heartbeat_timeout_ms,
                            inline=getattr(step, "inline", None),
                            on_missing_worker=getattr(step, "on_missing_worker", None),
                            flow_key=flow_key,
                            priority=priority,
                        )
                    )
                ]
            if kind == "http":
                return [
                    ScheduleStep(
                        StepCommand(
                            unit,
                            HTTP_TASK,
                            step.queue or HTTP_QUEUE,
                            _evaluate(step.http, root, self.now, self.meter),
                            "http",
                            RetryPolicy.of(step.retry),
                            step.timeout_ms,
                            step.queue_timeout_ms,
                            on_exhausted,
                            compensable,
                        )
                    )
                ]
            if kind == "workflow":
                return [
                    LinkChild(
                        unit,
                        f"{self.s.id}/{unit}",
                        step.workflow,
                        None,
                        _evaluate(step.input, root, self.now, self.meter),
                        on_exhausted,
                    )
                ]
            if kind == "compute":
                value = _evaluate(step.compute, root, self.now, self.meter)
                return [storable(RecordResult(unit, value), continue_)]
            if kind == "sleep":
                if step.sleep_until is not None:
                    until = _evaluate(step.sleep_until, root, self.now, self.meter)
                    return [WaitUntil(unit, _instant(until))]
                return [WaitUntil(unit, self.now + int(step.sleep_ms or 0))]
            if kind == "wait_for":
                return [WaitForSignal(unit, step.wait_for, step.timeout_ms, on_exhausted)]
        except (ExpressionError, ValueError) as e:
            return [FailStep(unit, _expression_error(unit, kind, e), continue_)]
        return [FailStep(unit, TaskError("UNKNOWN_STEP_KIND", f"{unit}: kind {kind!r}", False), continue_)]

    # -- `for` steps --
    def fan_out_progress(self, step: Any) -> list[Command]:
        name, fo = step.name, self.s.fanouts[step.name]
        continue_ = step.on_failure == "continue"
        if fo.failed > step.tolerated_failures:
            return [
                FailStep(
                    name,
                    TaskError(
                        "TOO_MANY_FAILURES",
                        f"{fo.failed} of {fo.total} elements of {name!r} failed "
                        f"(tolerated: {step.tolerated_failures})",
                        retryable=False,
                        details={"failed": fo.failed, "total": fo.total},
                    ),
                    continue_,
                )
            ]
        if fo.ended >= fo.total:
            outputs = [self.element_output(name, i) for i in range(fo.total)]
            return [RecordResult(name, outputs)]
        # At most FANOUT_ROUND elements start per round, so a decision that reaches its event budget
        # stops between rounds instead of committing a 200,000-element fan-out as one write.
        slots = min((step.concurrency or fo.total) - fo.running, FANOUT_ROUND)
        items = self.s.units[name].input or []
        out: list[Command] = []
        root = self.root(only=step.depends_on)
        for i in fo.to_schedule(slots):
            root_i = dict(root, item=items[i], index=i)
            out.extend(
                self.unit_commands(
                    step, f"{name}[{i}]", root_i, CONTINUE_WORKFLOW, compensable=step.compensate is not None
                )
            )
        return out

    def element_output(self, step: str, i: int) -> Any:
        u = self.s.units.get(f"{step}[{i}]")
        return u.output if u is not None else None

    # -- compensation and the end --
    def compensation(self) -> list[Command]:
        target = self.s.next_compensation()
        if target is None or compensation_key(target) in self.s.units:
            return []
        _, base, index = parse_key(target)
        step = self.d.steps.get(base)
        if step is None or step.compensate is None:
            return []  # the engine fails it as COMPENSATION_MISSING
        extra: dict[str, Any] = {}
        if index is not None:
            items = self.s.units[base].input or []
            extra = {"item": items[index] if index < len(items) else None, "index": index}
        return self.unit_commands(step.compensate, compensation_key(target), self.root(**extra), FAIL_RUN)

    def finish(self) -> Command:
        d = self.d
        if d.output is None:
            output = {n: self.s.units[n].output for n in d.steps if n in self.s.units}
        else:
            try:
                output = _evaluate(d.output, self.root(), self.now, self.meter)
            except ExpressionError as e:
                return Fail(TaskError(EXPRESSION_ERROR, f"output: {e}", retryable=False))
        err = self.contract(getattr(d, "output_schema", None), output, OUTPUT_CONTRACT_VIOLATION,
                            "output_schema")
        return Fail(err) if err is not None else Complete(output)


DslRuntime.run_class = _Run


def _instant(value: Any) -> int:
    """`sleep: {until: ...}` gives epoch ms or an ISO 8601 time."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"sleep until: {value!r} is not an ISO 8601 time") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return int(dt.timestamp() * 1000)
    # shown as JSON: the user wrote a JSON/YAML value, not a Python one
    raise ValueError(
        f"sleep until: expected an ISO 8601 time or epoch milliseconds, got {json.dumps(value, default=str)}"
    )
