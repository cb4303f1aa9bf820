"""The code runtime: replays `@orbit.workflow` functions behind the engine's command contract.

`CodeRuntime.run(workflow, state, now_ms)` returns the commands for what the
function asks next (see `orbit.core.runtime.commands`). The model: every durable
call returns its recorded result if history has one; the first call without
one stops the function there and becomes a command (`code/replay.py`).

Bounded decisions. Replaying from the first call costs O(recorded calls) per
decision. A warm decider instead keeps the paused instance
(`code/instance.py`) in an LRU cache keyed by execution id, and on the next
decision feeds it only what is new. The cache is process state, so it lives in
the service that hosts replay (`orbit/service/replay_host.py`, a subclass of
`CodeReplayer` below); this module keeps what is pure: one replay against a
state, and whether a paused instance may go on (`still_valid`). The cache is trusted only when the new
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
  (`code/witness.py`): one decision feeds the instance several times, so a
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

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from orbit.core.history.events import TaskError
from orbit.core.history.hook_tokens import KeySource
from orbit.core.history.state import ExecutionState, compensation_key
from orbit.core.runtime import commands as C
from orbit.core.runtime.code.attributes import still_recorded
from orbit.core.runtime.code.inline import Closures
from orbit.core.runtime.code.instance import Instance
from orbit.core.runtime.code.registry import CodeWorkflow
from orbit.core.runtime.code.witness import holds
from orbit.errors import BuildMismatch, UnknownWorkflow


class Workflows(Protocol):
    """Where builds are looked up (the host's `orbit.workflow.CodeRegistry`)."""

    def get(self, name: str, version: str | None = None, build: str | None = None) -> CodeWorkflow: ...

    def find(self, name: str, version: str | None = None,
             build: str | None = None) -> CodeWorkflow | None: ...


def replaceable(build: str) -> bool:
    """May an execution pinned to `build` move to another build that replays its history?
    Source-hash builds (the default) may; an explicit `build=` is an exact fence."""
    return build.startswith("src:")


class CodeReplayer:
    """Replays code workflows; on its own, every decision from the first call (cold). The host
    (`orbit/service/replay_host.CodeRuntime`) adds the cache of paused instances through `_take`
    and `_put`. What it needs is given: the builds it may run (`registry`), where `ctx.run`
    functions go (`closures`), the stack key (`run(keys=...)`) and the bound on code running
    without a durable call (`guard`)."""

    def __init__(self, registry: Workflows | None = None, closures: Closures | None = None) -> None:
        self.registry = registry
        self.closures = closures
        self.stats = {"cold": 0, "warm": 0}
        # the host's bound on code running without a durable call (orbit/service/stall.py):
        # guard(workflow name, calls made so far) -> a context manager around each feed
        self.guard: Callable[[str, Callable[[], int]], AbstractContextManager[Any]] | None = None

    def run(self, workflow: Any, state: ExecutionState, now_ms: int,
            keys: KeySource | None = None) -> list[C.Command]:
        """The commands for what the function asks next. `keys`: the stack key's source, for
        `ctx.hook_token` (None: no key, as in a replay check)."""
        if state.terminal:
            return []
        try:
            wf = self.pinned(workflow, state)
        except (BuildMismatch, UnknownWorkflow) as e:
            return self._switch(workflow, state, e, keys)
        return self._feed(wf, state, keys)

    def _feed(self, wf: CodeWorkflow, state: ExecutionState, keys: KeySource | None) -> list[C.Command]:
        inst = self._take(wf, state)
        if inst is None:
            self.stats["cold"] += 1
            inst = Instance(wf, state.id, self.closures)
        else:
            self.stats["warm"] += 1
        if self.guard is None:
            commands = inst.feed(state, keys)
        else:
            with self.guard(wf.name, lambda: inst.replay.calls):
                commands = inst.feed(state, keys)
        commands += self._compensation(inst, state)
        inst.redrives_seen = state.redrive_count
        if inst.finished:
            inst.discard()
        else:
            self._put(state.id, inst)
        return commands

    # -- what the host's cache overrides -----------------------------------------------------------
    def _take(self, wf: CodeWorkflow, state: ExecutionState) -> Instance | None:
        """A paused instance that may go on against `state` (`still_valid`), or None: replay."""
        return None

    def _put(self, execution_id: str, inst: Instance) -> None:
        """Keep a paused instance for the next decision (here: let it unwind)."""
        inst.discard()

    def forget(self, execution_id: str | None = None) -> None:
        """Drop paused instances (all, or one execution's): none are kept here."""

    def _switch(self, workflow: Any, state: ExecutionState, missing: Exception,
                keys: KeySource | None) -> list[C.Command]:
        """The pinned build is not here: replay the history on the build that is (safe deploy).

        Clean: switch to it. Diverged, or the execution is pinned exactly (an explicit `build=`),
        or no build of that version is here: park with BUILD_MISMATCH and the first divergence.
        """
        details: dict[str, Any] = {"pinned": state.build, "workflow": state.workflow,
                                   "version": state.version}
        target = workflow if isinstance(workflow, CodeWorkflow) and workflow.name == state.workflow \
            and workflow.version == state.version else \
            self.registry.find(state.workflow, state.version) if self.registry is not None else None
        if target is None:
            return [C.Park(TaskError("BUILD_MISMATCH", str(missing), retryable=False, details=details))]
        details["deployed"] = target.build
        if not replaceable(state.build):
            return [C.Park(TaskError("BUILD_MISMATCH", (
                f"execution {state.id!r} is pinned to build {state.build!r} of workflow {state.workflow!r} "
                f"(an explicit build= on @orbit.workflow), which this decider does not hold (it holds "
                f"{target.build!r}); deploy that build to finish it"), retryable=False, details=details))]
        commands = self._feed(target, state, keys)
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
        if self.registry is None:
            raise UnknownWorkflow(f"build {build!r} of code workflow {name!r} is not the one given, and no "
                                  "registry is at hand to look it up")
        return self.registry.get(name, version, build)


def still_valid(inst: Instance, wf: CodeWorkflow, state: ExecutionState) -> bool:
    """Does `state` extend what the instance saw? Costs what the last feed touched."""
    r = inst.replay
    if inst.finished or inst.workflow is not wf or state.last_seq <= inst.seen_seq:
        return False
    if inst.redrives_seen != state.redrive_count:
        return False  # a redrive reset units the instance already consumed: replay from the start
    if inst.origin is not None and (inst.origin[0] != state.created_at_ms or not (
            inst.origin[1] is state.input or inst.origin[1] == state.input)):
        return False  # another execution under the same id (e.g. a second store in one process)
    if state is not r.state and not r.seen.held_by(state):
        return False  # a state loaded again: what every feed relied on, in any branch (code/witness.py)
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
