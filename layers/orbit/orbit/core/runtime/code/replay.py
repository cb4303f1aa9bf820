"""Resolving durable calls against history: the heart of the code runtime.

Every durable call the workflow makes gets the next *position* (1, 2, ...)
and a unit key `"<position>.<label>"` (`3.payments.charge`, `4.sleep()`,
`5.wait_for(approval)`, `6.child(invoicing)`; `map` elements add `[i]`).
Given the state, a call is either resolved (its unit ended: return the output
or raise), pending (its unit is live: wait), or new (no unit: return the
command that creates it, then wait). A new call at a position where history
recorded another unit is non-determinism.

Values that must replay identically come from history, never from the host:
`now()` is the creation time advanced to the end time of every unit the code
has consumed (on a first run that is exactly the decision time); `random()`
and `uuid()` hash the execution id and a draw counter.

The `Replay` keeps, per feed, what it consumed (`witness`) and what it
promised (`emitted`), so a cached replay can be checked cheaply against the
next state (see `code.py`), and folds them into `seen` for a state loaded
again (`code/witness.py`).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from greenlet import getcurrent

from orbit.core.history.events import TaskError
from orbit.core.history.hook_tokens import identity, token_of, tokens_view
from orbit.core.history.state import (
    CANCELLED,
    FAILED,
    PENDING,
    SKIPPED,
    SUCCEEDED,
    ExecutionState,
    UnitState,
    parse_key,
)
from orbit.core.runtime import commands as C
from orbit.core.runtime.code.compare import describe_call as _describe
from orbit.core.runtime.code.compare import items_differences, step_values, value_differences
from orbit.core.runtime.code.compare import recorded_call as _recorded
from orbit.core.runtime.code.errors import (
    Cancelled,
    FailRun,
    StepFailed,
    WorkflowTimedOut,
    non_determinism,
    step_failed,
)
from orbit.core.runtime.code.keys import build_index
from orbit.core.runtime.code.limits import check_live
from orbit.core.runtime.code.patches import patched as _patched
from orbit.core.runtime.code.specs import Step, as_json
from orbit.core.runtime.code.updates import Updates
from orbit.core.runtime.code.witness import Seen, unit_fact

Block = Callable[[list[C.Command]], None]  # hands commands out, returns when a new state is fed


def running_replay() -> Replay | None:
    """The replay of the branch whose greenlet is running (code/branches.py), if any."""
    return getattr(getcurrent(), "replay", None)


def private(value: Any) -> Any:
    """A copy the workflow may mutate: values handed to code must never alias the state.
    History values are JSON, so a plain walk does (several times faster than deepcopy)."""
    if isinstance(value, dict):
        return {k: private(v) for k, v in value.items()}
    if isinstance(value, list):
        return [private(v) for v in value]
    return value


def _rank(e: BaseException) -> int:
    """Fail-run beats cancellation beats a catchable failure (a StepFailed or a subclass of it)."""
    return 3 if isinstance(e, FailRun) else 2 if isinstance(e, Cancelled) else 1


def position_of(key: str) -> int | None:
    """The durable-call position encoded in a code unit key, or None for other units."""
    head, dot, _ = key.partition(".")
    return int(head) if dot and head.isdigit() else None


class Replay:
    """The replay state of one execution of a workflow function (one per cached instance)."""

    prefix = ""  # unit-key prefix of the calls it makes: "" at top level, a branch's in a group
    scopes: tuple[Any, ...] = ()  # the `ctx.scope()`s its calls run in, outermost first

    def __init__(self, execution_id: str, block: Block, closures: Any = None) -> None:
        self.execution_id = execution_id
        self._block = block
        self.closures = closures  # the host's table of ctx.run functions (code_inline.Closures), or None
        self.state: ExecutionState = ExecutionState(execution_id)
        self.position = 0
        self._index: dict[str, dict[int, str]] | None = None  # prefix -> position -> recorded key
        self.known_units = -1
        self.now_ms = 0
        self.draws = 0
        self.cancel_delivered = False
        self.progress_made = 0
        self.last_progress: Any = None
        self.outbox: list[C.Command] = []  # progress records waiting to go out with the next stop
        self.keys: Any = None  # the decision's hook-key source (hook_tokens.KeySource), given per feed
        self.witness: list[tuple[Any, ...]] = []
        self.emitted_units: list[str] = []
        self.emitted_hooks: list[str] = []
        self.emitted_patches: list[str] = []
        self.marked: set[str] = set()  # patches this replay marked (recorded with its next stop)
        self.compensations: dict[str, Step] = {}  # unit -> its compensating step, once it succeeded
        self.updates = Updates()  # ctx.update_handler (code/updates.py)
        self.seen = Seen()  # what every earlier feed relied on (code/witness.py)
        self.calls = 0  # durable calls made, in any branch (read by a stall guard between them)

    # -- feeding ---------------------------------------------------------------------------
    def begin(self, state: ExecutionState) -> None:
        """Take a new state; reindex recorded positions only when units appeared we did not create."""
        if self.state.id != state.id or not self.now_ms:
            self.now_ms = state.created_at_ms
        self.state = state
        self.seen.fold(self)
        self.witness, self.emitted_units, self.emitted_hooks, self.emitted_patches = [], [], [], []
        self.updates.emitted = []
        if len(state.units) != self.known_units:
            self._index = None  # rebuilt on first use: a replay that only meets recorded calls never needs it
            self.known_units = len(state.units)

    @property
    def nested_index(self) -> dict[str, dict[int, str]]:
        """Recorded positions of every branch, by key prefix (`code_keys`)."""
        if self._index is None:
            self._index = build_index(self.state.units)
        return self._index

    @property
    def index(self) -> dict[int, str]:
        """position -> recorded unit key (the base key for map elements) of this replay's calls."""
        return self.nested_index.setdefault(self.prefix, {})

    def _emit_units(self, position: int, keys: Sequence[str]) -> None:
        """Remember units this feed asks for: a cached instance is valid only once they exist."""
        check_live(self, keys)
        if position:
            self.index.setdefault(position, parse_key(keys[0])[1])
        self.emitted_units.extend(keys)
        self.known_units += len(keys)

    def _wait(self, commands: list[C.Command], updates: bool = True) -> None:
        if updates:  # a durable call blocks here: the deterministic point for updates
            commands = commands + self.updates.at_block(self)
        out, self.outbox = self.outbox + commands, []
        self.seen.note(out)
        self._block(out)

    def take_outbox(self) -> list[C.Command]:
        out, self.outbox = self.outbox, []
        return out

    # -- checks shared by every call -------------------------------------------------------
    def next_position(self) -> int:
        owner = running_replay()  # set on a branch's greenlet (code/branches.py)
        if owner is not None and owner is not self:
            raise TypeError("a durable call inside a branch must use the branch's own ctx (the first "
                            "argument of the branch function), not an outer one")
        self.position += 1
        getattr(self, "root", self).calls += 1  # progress, for the host's stall guard
        return self.position

    def _check_absent(self, position: int, requested: dict[str, Any]) -> None:
        recorded_key = self.index.get(position)
        if recorded_key is not None:
            u = self.state.units.get(recorded_key)
            recorded = _recorded(recorded_key, u) if u else _describe("unit", recorded_key)
            raise non_determinism(position, recorded, requested, self.execution_id)

    def _check_present(self, position: int, key: str, u: UnitState, requested: dict[str, Any],
                       command: C.Command | dict[str, Any] | None = None) -> None:
        """The recorded unit must be the same call: kind and name, then (given the `command` the
        call would issue) every value that matters (`code_compare`)."""
        task = requested.get("task") or requested.get("workflow")
        if (u.kind and u.kind != requested["kind"]) or (task and u.task and u.task != task) or \
                (requested.get("signal") and u.signal != requested["signal"]):
            raise non_determinism(position, _recorded(key, u), requested, self.execution_id)
        differs = value_differences(u, command, self._hook_view()) if command is not None else None
        if differs:
            raise non_determinism(position, _recorded(key, u), requested, self.execution_id, differs)

    def check_finished(self) -> None:
        """History must not hold calls the code no longer makes."""
        later = [p for p in self.index if p > self.position]
        if later:
            p = min(later)
            key = self.index[p]
            u = self.state.units.get(key)
            raise non_determinism(p, _recorded(key, u) if u else _describe("unit", key), None,
                                  self.execution_id)

    def abort_kind(self) -> str | None:
        a = self.state.abort
        return str(a.get("kind")) if a else None

    def _cancel_exception(self) -> Cancelled:
        self.cancel_delivered = True
        a = self.state.abort or {}
        reason = str(a.get("reason") or "")
        if a.get("kind") == "timed_out":
            return WorkflowTimedOut(reason or "workflow timed out")
        return Cancelled(reason or "cancelled")

    def _maybe_deliver_cancel(self) -> None:
        """A new call after a cancel (or timeout) request that the code has not seen yet raises it.

        Not while the code is handling an exception: then its pending call ended some other way
        in the same decision as the request (a wait that timed out as the workflow did) and the
        code is already cleaning up; the execution still ends as the request says.
        """
        for scope in self.scopes:  # a cancelled scope stops new calls in it (code/scope.py)
            if scope.cancelled:
                raise Cancelled(scope.reason)
        if self.cancel_delivered or self.abort_kind() not in ("cancelled", "timed_out"):
            return
        if any(scope.shielded for scope in self.scopes) or sys.exc_info()[1] is not None:
            return
        self.witness.append(("abort", self.abort_kind()))
        raise self._cancel_exception()

    def _consume(self, key: str, u: UnitState) -> None:
        self.witness.append(unit_fact(key, u))
        if u.finished_at_ms and u.finished_at_ms > self.now_ms:
            self.now_ms = u.finished_at_ms
        self.updates.before_return(self)  # updates that ran while this call waited run again

    def _ended(self, key: str, u: UnitState, fail_run: bool) -> Any:
        """Value of an ended unit, or the exception the workflow sees."""
        self._consume(key, u)
        if u.status in (SUCCEEDED, SKIPPED):
            return private(u.output)
        if u.status == CANCELLED:
            raise self._cancel_exception()
        error = u.error or TaskError("FAILED", f"unit {key!r} failed", retryable=False)
        if fail_run:
            raise FailRun(error.replace(message=f"step {key!r} failed: {error.message}"))
        raise step_failed(key, error)

    # -- single-unit calls -----------------------------------------------------------------
    def await_unit(self, kind: str, label: str, make: Callable[[str], C.Command], fail_run: bool,
                   values: Callable[[UnitState], dict[str, Any] | None] | None = None,
                   **names: Any) -> Any:
        """Resolve one call backed by one unit (step, sleep, wait_for, child)."""
        position = self.next_position()
        key = f"{self.prefix}{position}.{label}"
        requested = _describe(kind, key, **names)
        compared = False
        while True:
            u = self.state.units.get(key)
            if u is None or u.status == PENDING:  # new, or reset by a redrive: (re)start it
                if u is None:
                    self._check_absent(position, requested)
                else:
                    self._check_present(position, key, u, requested)
                self._maybe_deliver_cancel()
                self._emit_units(position, [key])
                self._wait([make(key)])
                compared = True  # issued by this very code
                continue
            self._check_present(position, key, u, requested,
                                None if compared else values(u) if values else make(key))
            compared = True
            if u.terminal:
                return self._ended(key, u, fail_run)
            self._wait([])

    def step(self, spec: Step) -> Any:
        output = self.await_unit("task", spec.label, lambda key: C.ScheduleStep(spec.command(key)),
                                 spec.on_exhausted == C.FAIL_RUN,
                                 lambda u: step_values(spec, spec.input, u), task=spec.task)
        self._compensable(f"{self.prefix}{self.position}.{spec.label}", spec, output)
        return output

    def _compensable(self, key: str, spec: Step, output: Any) -> None:
        if spec.compensate is not None:
            self.compensations[key] = spec.compensation(output)

    # -- several units at once -------------------------------------------------------------
    def parallel(self, specs: Sequence[Step], return_exceptions: bool) -> list[Any]:
        """Run steps side by side (one position each, scheduled in one command); wait for all."""
        keys = [f"{self.prefix}{self.next_position()}.{s.label}" for s in specs]
        first = self.position - len(specs) + 1
        compared: set[int] = set()
        while True:
            absent = []
            for i, (key, spec) in enumerate(zip(keys, specs)):
                u = self.state.units.get(key)
                requested = _describe("task", key, task=spec.task)
                if u is None:
                    self._check_absent(first + i, requested)
                    absent.append(i)
                    compared.add(i)  # issued by this very code
                elif u.status == PENDING:  # reset by a redrive: (re)start it
                    self._check_present(first + i, key, u, requested)
                    absent.append(i)
                    compared.add(i)
                else:
                    fresh = i not in compared
                    compared.add(i)
                    self._check_present(first + i, key, u, requested,
                                        step_values(spec, spec.input, u) if fresh else None)
            if absent:
                self._maybe_deliver_cancel()
                for i in absent:
                    self._emit_units(first + i, [keys[i]])
                self._wait([C.ScheduleSteps([specs[i].command(keys[i]) for i in absent])])
                continue
            units = [self.state.units[k] for k in keys]
            if not all(u.terminal for u in units):
                self._wait([])
                continue
            results: list[Any] = []
            failure: BaseException | None = None
            for key, spec, u in zip(keys, specs, units):
                try:
                    results.append(self._ended(key, u, spec.on_exhausted == C.FAIL_RUN))
                    self._compensable(key, spec, results[-1])
                except (StepFailed, Cancelled, FailRun) as e:
                    if return_exceptions and isinstance(e, StepFailed):
                        results.append(e)
                        continue
                    # fail-run beats cancellation beats a catchable failure: the strongest wins.
                    if failure is None or _rank(e) > _rank(failure):
                        failure = e
                    results.append(None)
            if failure is not None:
                raise failure
            return results

    def map(self, spec: Step, items: list[Any], concurrency: int | None,
            tolerated_failures: int) -> list[Any]:
        """Fan `spec.task` out over `items` (`<pos>.<label>[i]`), at most `concurrency` at a time."""
        position = self.next_position()
        base = f"{self.prefix}{position}.{spec.label}"
        requested = _describe("map", base, task=spec.task)
        limit = concurrency or len(items) or 1
        compared = False
        while True:
            parent = self.state.units.get(base)
            if parent is not None and not compared:
                compared = True
                self._check_map(position, base, parent, spec, items, requested)
            if parent is None:
                if len(items) > C.MAX_FOR_ITEMS:  # a new map only: one recorded before the limit replays
                    raise C.too_many_items(base, "map", len(items))
                compared = True
                self._check_absent(position, requested)
                self._maybe_deliver_cancel()
                first = [C.ScheduleStep(spec.command(f"{base}[{i}]", item, C.CONTINUE_WORKFLOW))
                         for i, item in enumerate(items[:limit])]
                self._emit_units(position, [base] + [f"{base}[{i}]" for i in range(len(first))])
                done: list[C.Command] = [C.RecordResult(base, [])] if not items else []
                fan_out = C.FanOut(base, as_json(list(items), f"the items of map {base!r}", "items"))
                self._wait([fan_out, *first, *done])
                continue
            self._check_present(position, base, parent, requested)
            if parent.terminal:
                return self._ended(base, parent, spec.on_exhausted == C.FAIL_RUN)  # type: ignore[no-any-return]
            self._wait(self._map_progress(base, spec, len(items), limit, tolerated_failures))

    def _check_map(self, position: int, base: str, parent: UnitState, spec: Step, items: list[Any],
                   requested: dict[str, Any]) -> None:
        """A recorded map must have the same items, and its elements the same task and policy."""
        want = as_json(items, f"the items of map {base!r}", "items")
        differs = items_differences(parent.input, want, self._hook_view())
        if differs:
            raise non_determinism(position, _recorded(base, parent), requested, self.execution_id, differs)
        key = f"{base}[0]"
        first = self.state.units.get(key)
        if first is not None and items:
            self._check_present(position, key, first, _describe("task", key, task=spec.task),
                                step_values(spec, items[0], first))

    def _map_progress(self, base: str, spec: Step, total: int, limit: int, tolerated: int) -> list[C.Command]:
        """Commands that move a running map on: finish it, fail it, or schedule more elements."""
        fo = self.state.fanouts.get(base)
        parent = self.state.units[base]
        if fo is None:
            return []
        if fo.failed > tolerated:
            first = next(self.state.units[f"{base}[{i}]"] for i in range(total)
                         if self.state.status_of(f"{base}[{i}]") == FAILED)
            err = first.error or TaskError("FAILED", "element failed", retryable=False)
            error = err.replace(message=f"{fo.failed} of {total} elements failed (tolerated "
                                        f"{tolerated}); first: {err.message}")
            return [C.FailStep(base, error, continue_workflow=spec.on_exhausted == C.CONTINUE_WORKFLOW)]
        if fo.ended >= total:
            units = self.state.units
            return [C.RecordResult(base, [units[f"{base}[{i}]"].output if units[f"{base}[{i}]"].status
                                          == SUCCEEDED else None for i in range(total)])]
        indexes = [i for i in fo.to_schedule(limit - fo.running) if i < total]
        if not indexes:
            return []
        items = parent.input if isinstance(parent.input, list) else []
        keys = [f"{base}[{i}]" for i in indexes]
        self._emit_units(0, keys)  # elements of a map whose position is already indexed
        return [C.ScheduleStep(spec.command(k, items[i], C.CONTINUE_WORKFLOW))
                for i, k in zip(indexes, keys)]

    # -- calls without units ---------------------------------------------------------------
    def hook_token(self, name: str, metadata: Any = None) -> str:
        while True:
            hook = self.state.hooks.get(name)
            if hook is not None:
                self.witness.append(("hook", name, identity(hook)))
                return token_of(self.state.id, name, hook, self.keys)
            self.emitted_hooks.append(name)
            self._wait([C.CreateHook(name, metadata=metadata)], updates=False)

    def _hook_view(self) -> dict[str, Any]:
        return tokens_view(self.state.id, self.state.hooks, self.keys)

    def patched(self, change_id: str, deprecated: bool = False) -> bool:
        return _patched(self, change_id, deprecated)

    def progress(self, data: Any) -> None:
        # The engine records progress only when it differs from the current value; count the same way.
        if data == self.last_progress:
            return
        self.last_progress = data
        self.progress_made += 1
        if self.progress_made > getattr(self.state, "progress_count", 0):
            self.outbox.append(C.RecordProgress(as_json(data, "progress data", "progress")))

    def draw(self, purpose: str) -> bytes:
        self.draws += 1
        return hashlib.sha256(f"{self.execution_id}\x00{purpose}\x00{self.draws}".encode()).digest()
