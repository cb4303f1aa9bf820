"""The code runtime: replays `@orbit.workflow` functions behind the engine's command contract.

`CodeRuntime.run(workflow, state, now_ms)` returns the commands for what the
function asks next (see `orbit.core.runtime.commands`). The model: every durable
call returns its recorded result if history has one; the first call without
one stops the function there and becomes a command (`code_replay.py`).

Bounded decisions. Replaying from the first call costs O(recorded calls) per
decision. A warm decider instead keeps the paused instance
(`code_instance.py`) in an LRU cache keyed by execution id, and on the next
decision feeds it only what is new. The cache is trusted only when the new
state provably extends what the instance saw:
- `state.last_seq` is past the seq the instance last saw (a decision retried
  after a lost conditional write reloads a state that fails one of the checks
  below, since the losing commit's events are missing from it);
- every unit and hook the instance asked for exists;
- every result it consumed in its last feed is recorded identically (with
  its end time, which `ctx.now()` reads);
- the progress it recorded is there;
- when `state` is not the very object the instance saw last, advanced in
  place by the engine, but one loaded again (after a lost commit, say), all
  of that holds for every earlier feed too, in every branch
  (`code_witness.py`): one decision feeds the instance several times, so a
  lost commit may hold results that only an earlier feed consumed.
Otherwise the instance is discarded and the function replays from the start,
which is always correct. So the conditional write on seq stays the only
synchronisation point; the cache is a pure optimisation.

Builds: an execution replays with the build recorded in its `WorkflowCreated`
(or its last `BuildSwitched`). When this process does not hold that build (a
deploy replaced the code), the history is replayed on the build it does hold:
if every recorded call matches, the execution switches to it (`SwitchBuild`);
if not, it parks with the first divergence and the engine tries again later.
An explicit `build=` pins exactly: such an execution only ever runs on that build.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from orbit.core.history.events import TaskError
from orbit.core.history.state import ExecutionState, compensation_key
from orbit.core.runtime import commands as C
from orbit.core.runtime.code_attributes import still_recorded
from orbit.core.runtime.code_instance import Instance
from orbit.core.runtime.code_registry import REGISTRY, CodeRegistry, CodeWorkflow
from orbit.core.runtime.code_witness import holds
from orbit.errors import BuildMismatch, UnknownWorkflow

DEFAULT_CACHE_SIZE = 256
# Paused branches the cache may hold across its instances (each about 6.5 kB parked, so ~130 MB):
# a wide execution counts for its live units, not as one entry (docs/decisions/width-greenlets.md).
DEFAULT_CACHE_UNITS = 20_000


def replaceable(build: str) -> bool:
    """May an execution pinned to `build` move to another build that replays its history?
    Source-hash builds (the default) may; an explicit `build=` is an exact fence."""
    return build.startswith("src:")


class CodeRuntime:
    """Runtime for code workflows; one per process is enough (it is thread-safe)."""

    def __init__(self, registry: CodeRegistry | None = None, cache_size: int = DEFAULT_CACHE_SIZE,
                 cache_units: int = DEFAULT_CACHE_UNITS) -> None:
        self.registry = registry or REGISTRY
        self.cache_size = cache_size
        self.cache_units = cache_units  # live units (≈ parked branches) of every cached instance
        self._weights: dict[str, int] = {}
        self._cache: OrderedDict[str, Instance] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = {"cold": 0, "warm": 0}
        # the host's bound on code running without a durable call (orbit/service/stall.py):
        # guard(workflow name, calls made so far) -> a context manager around each feed
        self.guard: Callable[[str, Callable[[], int]], AbstractContextManager[Any]] | None = None

    def run(self, workflow: Any, state: ExecutionState, now_ms: int) -> list[C.Command]:
        if state.terminal:
            return []
        try:
            wf = self.pinned(workflow, state)
        except (BuildMismatch, UnknownWorkflow) as e:
            return self._switch(workflow, state, e)
        return self._feed(wf, state)

    def _feed(self, wf: CodeWorkflow, state: ExecutionState) -> list[C.Command]:
        inst = self._take(state.id)
        if inst is not None and not self._still_valid(inst, wf, state):
            inst.discard()
            inst = None
        if inst is None:
            self.stats["cold"] += 1
            inst = Instance(wf, state.id)
        else:
            self.stats["warm"] += 1
        if self.guard is None:
            commands = inst.feed(state)
        else:
            with self.guard(wf.name, lambda: inst.replay.calls):
                commands = inst.feed(state)
        commands += self._compensation(inst, state)
        inst.redrives_seen = state.redrive_count
        if inst.finished or self.cache_size <= 0:
            inst.discard()
        else:
            self._put(state.id, inst)
        return commands

    def _switch(self, workflow: Any, state: ExecutionState, missing: Exception) -> list[C.Command]:
        """The pinned build is not here: replay the history on the build that is (safe deploy).

        Clean: switch to it. Diverged, or the execution is pinned exactly (an explicit `build=`),
        or no build of that version is here: park with BUILD_MISMATCH and the first divergence.
        """
        details: dict[str, Any] = {"pinned": state.build, "workflow": state.workflow,
                                   "version": state.version}
        target = workflow if isinstance(workflow, CodeWorkflow) and workflow.name == state.workflow \
            and workflow.version == state.version else self.registry.find(state.workflow, state.version)
        if target is None:
            return [C.Park(TaskError("BUILD_MISMATCH", str(missing), retryable=False, details=details))]
        details["deployed"] = target.build
        if not replaceable(state.build):
            return [C.Park(TaskError("BUILD_MISMATCH", (
                f"execution {state.id!r} is pinned to build {state.build!r} of workflow {state.workflow!r} "
                f"(an explicit build= on @orbit.workflow), which this decider does not hold (it holds "
                f"{target.build!r}); deploy that build to finish it"), retryable=False, details=details))]
        commands = self._feed(target, state)
        park = next((c for c in commands if isinstance(c, C.Park)), None)
        if park is None:
            return [C.SwitchBuild(state.build, target.build), *commands]
        details.update(park.error.details if isinstance(park.error.details, dict) else {})
        details["cause"] = park.error.code
        return [C.Park(TaskError("BUILD_MISMATCH", (
            f"build {state.build!r} of workflow {state.workflow!r} is not deployed, and its history does "
            f"not replay on the deployed build {target.build!r}: {park.error.message}"),
            retryable=False, details=details))]

    @staticmethod
    def _compensation(inst: Instance, state: ExecutionState) -> list[C.Command]:
        """While compensating, the command for the step the engine compensates now (one at a time,
        in reverse order of success), from the `compensate=` the replay saw for that step."""
        step = state.next_compensation()
        if step is None:
            return []
        key = compensation_key(step)
        spec = inst.replay.compensations.get(step)
        if key in state.units or spec is None:
            return []  # running already, or none declared: the engine records COMPENSATION_MISSING
        try:
            return [C.ScheduleStep(spec.command(key, on_exhausted=C.FAIL_RUN))]
        except (TypeError, ValueError) as e:
            return [C.FailStep(key, TaskError("WORKFLOW_ERROR", f"compensation of {step!r}: {e}", False))]

    def pinned(self, workflow: Any, state: ExecutionState) -> CodeWorkflow:
        """The build `state` was started with: `workflow` itself, or the same name/version from
        the registry; BuildMismatch when this process does not hold it."""
        build = state.build or getattr(workflow, "build", "")
        if isinstance(workflow, CodeWorkflow) and workflow.build == build:
            return workflow
        name = state.workflow or workflow.name
        version = state.version or workflow.version
        return self.registry.get(name, version, build)

    def forget(self, execution_id: str | None = None) -> None:
        """Drop cached instances (all, or one execution's)."""
        with self._lock:
            victims = list(self._cache.values()) if execution_id is None else \
                [i for i in [self._cache.get(execution_id)] if i is not None]
            if execution_id is None:
                self._cache.clear()
                self._weights.clear()
            else:
                self._cache.pop(execution_id, None)
                self._weights.pop(execution_id, None)
        for inst in victims:
            inst.discard()

    # -- the cache -------------------------------------------------------------------------------
    def _take(self, execution_id: str) -> Instance | None:
        """Remove and return the cached instance: one decision uses it at a time."""
        with self._lock:
            self._weights.pop(execution_id, None)
            return self._cache.pop(execution_id, None)

    def _put(self, execution_id: str, inst: Instance) -> None:
        evicted: list[Instance] = []
        with self._lock:
            old = self._cache.pop(execution_id, None)
            if old is not None and old is not inst:
                evicted.append(old)
            self._cache[execution_id] = inst
            self._weights[execution_id] = len(inst.replay.state.active)
            while len(self._cache) > self.cache_size or (
                    len(self._cache) > 1 and sum(self._weights.values()) > self.cache_units):
                eid, victim = self._cache.popitem(last=False)
                self._weights.pop(eid, None)
                evicted.append(victim)
        for e in evicted:
            e.discard()

    @staticmethod
    def _still_valid(inst: Instance, wf: CodeWorkflow, state: ExecutionState) -> bool:
        """Does `state` extend what the instance saw? Costs what the last feed touched."""
        r = inst.replay
        if inst.finished or inst.workflow is not wf or state.last_seq <= inst.seen_seq:
            return False
        if not inst.usable_here():
            return False  # paused on another thread's greenlet: replay here (code_instance.py)
        if inst.redrives_seen != state.redrive_count:
            return False  # a redrive reset units the instance already consumed: replay from the start
        if inst.origin is not None and (inst.origin[0] != state.created_at_ms or not (
                inst.origin[1] is state.input or inst.origin[1] == state.input)):
            return False  # another execution under the same id (e.g. a second store in one process)
        if state is not r.state and not r.seen.held_by(state):
            return False  # a state loaded again: what every feed relied on, in any branch (code_witness.py)
        if any(k not in state.units for k in r.emitted_units):
            return False
        if any(h not in state.hooks for h in r.emitted_hooks):
            return False
        if any(p not in state.patches for p in r.emitted_patches):
            return False
        if getattr(state, "progress_count", r.progress_made) < r.progress_made:
            return False
        if not still_recorded(r, state):  # ctx.set_attributes values whose commit was lost
            return False
        if not r.updates.recorded(state):
            return False  # an update handler ran in a decision whose commit was lost
        return all(holds(fact, state) for fact in r.witness)


_DEFAULT = CodeRuntime()


def runtime_for(workflow: Any) -> CodeRuntime:
    """The process-wide code runtime (the decider's fallback for objects without `.runtime`)."""
    return _DEFAULT


def default_runtime() -> CodeRuntime:
    return _DEFAULT
