"""`on_signal` handlers in the definition interpreter (docs/definitions.md, "Event handlers").

Each arrival of a handled signal (a `SignalReceived` or `HookResumed`, buffered like any other)
becomes an instance: unit `on_signal:<signal>@<seq>`, `seq` being the arrival's event. At most
`concurrency` instances of one signal run at once (default 1: one at a time, in arrival order);
the others stay buffered until one ends. An instance's steps are units
`on_signal:<signal>@<seq>:<step>` (elements `...:<step>[i]`, compensations
`compensate:on_signal:<signal>@<seq>:<step>`); they run under the engine's usual life cycles, so
retries, timeouts, cancellation, compensation and the workflow timeout cover them. When every
step of an instance has ended, the instance succeeds with the handler's `output`.

The main flow decides the end: once its steps have all ended, the instances still running are
cancelled (`CancelUnit`, the engine withdraws their tasks) and the execution ends; arrivals not
started yet are dropped with it.

`HandlersRuntime` (what `decider.runtime_for` picks for a definition with `on_signal`) runs
`HandlerRun`: the main flow's `_Run` plus the instances. An instance is interpreted by
`_Instance`, a `_Run` whose unit keys carry the instance prefix and whose expression root is the
handler's (`steps` = its own steps, `event`, `main.steps`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from orbit.core.history.events import EXPRESSION_ERROR, TaskError
from orbit.core.history.state import PENDING, RUNNING, TERMINAL_UNIT, compensation_key, parse_key
from orbit.core.runtime.commands import FAIL_RUN, CancelUnit, Command, FailStep, RecordResult, StartHandler
from orbit.core.runtime.dsl.interpreter import DslRuntime, _evaluate, _Run
from orbit.errors import ExpressionError

PREFIX = "on_signal:"
ENDED_WITH_MAIN = "the main flow ended"


def instance_key(signal: str, seq: int) -> str:
    return f"{PREFIX}{signal}@{seq}"


def split_key(key: str) -> tuple[str, int, str | None] | None:
    """`on_signal:S@N[:step...]` -> (S, N, the rest after the instance or None); else None."""
    if not key.startswith(PREFIX):
        return None
    head, _, rest = key[len(PREFIX):].partition(":")
    signal, at, seq = head.rpartition("@")
    if not at or not seq.isdigit():
        return None
    return signal, int(seq), rest or None


class HandlerRun(_Run):
    """One round of a definition with handlers: the main flow, then its handler instances."""

    def after_main(self, out: list[Command], main_done: bool) -> list[Command]:
        if main_done:  # the main flow ends the execution: running handler units are cancelled
            return [*end_handlers(self), self.finish()]
        return out + handler_commands(self)

    def compensation(self) -> list[Command]:
        target = self.s.next_compensation()
        if target is not None and compensation_key(target) not in self.s.units:
            handled = handler_compensation(self, target)
            if handled is not None:
                return handled
        return super().compensation()


class HandlersRuntime(DslRuntime):
    run_class = HandlerRun


class _Live:
    """The live instances of one decision (kept on its `Plan`): found once, by a scan of the active
    units, then kept up to date from the commands. `look`: the instances the next round must
    interpret: every one at first, then only those the previous round gave commands for (during a
    decision an instance's units change only through its own commands: results, wake-ups and
    heartbeats were applied before the first round), as `Plan.watch` does for top-level steps."""

    def __init__(self, state: Any) -> None:
        self.keys: dict[str, str] = {}  # instance key -> signal name
        for key in state.active:
            parts = split_key(key)
            if parts is not None and parts[2] is None:
                self.keys[key] = parts[0]
        self.look: set[str] = set(self.keys)


def handler_commands(run: _Run) -> list[Command]:
    """What the running instances do next, and the instances that start now."""
    s, handlers = run.s, run.d.handlers
    live: _Live | None = run.plan.handlers
    if live is None:
        live = run.plan.handlers = _Live(s)
    look, live.look = live.look, set()
    out: list[Command] = []
    running: dict[str, int] = {}
    main: dict[str, Any] | None = None
    for key, name in list(live.keys.items()):
        u = s.units.get(key)
        if u is None or u.status != RUNNING or name not in handlers:
            del live.keys[key]
            continue
        running[name] = running.get(name, 0) + 1
        if key not in look:
            continue
        if main is None:
            main = run.root()["steps"]
        commands = _Instance(run, key, handlers[name], main).commands()
        if commands:
            out.extend(commands)
            live.look.add(key)
    for name, handler in handlers.items():
        for entry in (s.signals.get(name) or [])[: max(0, handler.concurrency - running.get(name, 0))]:
            seq = int(entry.get("seq") or 0)
            key = instance_key(name, seq)
            live.keys[key] = name
            live.look.add(key)
            out.append(StartHandler(key, name, seq, str(entry.get("signal_id") or ""), entry.get("payload")))
    return out


def end_handlers(run: _Run) -> list[Command]:
    """The main flow has ended: cancel every live handler unit (instances, their steps, elements)."""
    return [CancelUnit(k, ENDED_WITH_MAIN) for k in run.s.active if k.startswith(PREFIX)]


def handler_compensation(run: _Run, target: str) -> list[Command] | None:
    """The compensation of a handler step (`target`: its unit key), or None if it is not one."""
    _, base, index = parse_key(target)
    parts = split_key(base)
    if parts is None or parts[2] is None:
        return None
    signal, seq, local = parts
    handler = run.d.handlers.get(signal)
    step = handler.steps.get(local) if handler is not None else None
    if step is None or step.compensate is None:
        return []  # the engine fails it as COMPENSATION_MISSING
    instance = _Instance(run, instance_key(signal, seq), handler, run.root()["steps"])
    extra: dict[str, Any] = {}
    if index is not None:
        items = run.s.units[base].input or []
        extra = {"item": items[index] if index < len(items) else None, "index": index}
    return instance.unit_commands(step.compensate, compensation_key(target), instance.root(**extra), FAIL_RUN)


class _Instance(_Run):
    """One instance: the handler's steps under unit keys `<instance>:<step>`."""

    def __init__(self, run: _Run, key: str, handler: Any, main_steps: dict[str, Any]) -> None:
        super().__init__(run.d, run.s, run.now, run.plan, run.keys, run.meter)
        self.key, self.handler, self.prefix = key, handler, key + ":"
        self.main_steps = main_steps
        unit = run.s.units.get(key)
        self.event = unit.input if unit is not None else None

    def root(self, only: frozenset[str] | None = None, **extra: Any) -> dict[str, Any]:
        r = super().root(only=frozenset())
        names = sorted(only) if only is not None else list(self.handler.steps)
        r["steps"] = {n: v for n in names if (v := self._step_view(self.prefix + n)) is not None}
        r["event"] = self.event
        r["main"] = {"steps": self.main_steps}
        r.update(extra)
        return r

    def commands(self) -> list[Command]:
        s, out, ended = self.s, [], 0
        for local, body in self.handler.steps.items():
            key = self.prefix + local
            u = s.units.get(key)
            # the step under its unit key (`begin` and `fan_out_progress` name units after it); made
            # only when needed: most rounds look at instances whose steps are all under way
            if u is None or u.status == PENDING:
                if all(s.status_of(self.prefix + d) in TERMINAL_UNIT for d in body.depends_on):
                    out.extend(self.begin(replace(body, name=key)))
            elif u.status == RUNNING and key in s.fanouts:
                out.extend(self.fan_out_progress(replace(body, name=key)))
            elif u.terminal:
                ended += 1
        if ended == len(self.handler.steps) and not out:
            out.append(self.finish())
        return out

    def finish(self) -> Command:
        h, s = self.handler, self.s
        if h.output is None:
            units = ((n, s.units.get(self.prefix + n)) for n in h.steps)
            return RecordResult(self.key, {n: u.output for n, u in units if u is not None})
        try:
            return RecordResult(self.key, _evaluate(h.output, self.root(), self.now, self.meter))
        except ExpressionError as e:
            return FailStep(self.key, TaskError(EXPRESSION_ERROR, f"{self.key}.output: {e}", retryable=False))
