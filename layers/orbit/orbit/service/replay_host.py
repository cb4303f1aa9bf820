"""The process side of code-workflow replay: what `core/` must not keep (issue 27, section 5).

`core/runtime/code/replayer.py`'s `CodeReplayer` replays a workflow against a state and nothing more. A
process that decides many executions keeps, on top of it:

- **the cache of paused instances** (`CodeRuntime`): an LRU by execution id, bounded by entries and
  by the live units (≈ parked branches) of every cached instance. An instance is taken out for one
  decision at a time and used only when `code.still_valid` says the new state extends what it saw,
  and only on the thread that started it (a greenlet never switches across threads): elsewhere the
  decision replays cold, which any decision must be able to do;
- **the table of `ctx.run` functions** (`Closures`): per (execution, unit), the function object the
  replay passed last, so the decider's inline runner runs the very closure (never a function
  imported by its recorded name). A process that lacks one replays the workflow to reach the call
  again (`orbit/service/inline.py` `recall`);
- **the process's runtime** (`default_runtime`), used by every engine that is not given its own.

The registry of builds (`orbit.workflow.REGISTRY`) is filled by `@orbit.workflow` and read here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from orbit.core.history.state import ExecutionState
from orbit.core.runtime.code.instance import Instance
from orbit.core.runtime.code.registry import CodeWorkflow
from orbit.core.runtime.code.replayer import CodeReplayer, Workflows, still_valid
from orbit.workflow import REGISTRY

DEFAULT_CACHE_SIZE = 256
# Paused branches the cache may hold across its instances (each about 6.5 kB parked, so ~130 MB):
# a wide execution counts for its live units, not as one entry (docs/decisions/width-greenlets.md).
DEFAULT_CACHE_UNITS = 20_000
MAX_REMEMBERED = 4096  # (execution, unit) -> ctx.run function; a bounded LRU, oldest dropped


class Closures:
    """The functions `ctx.run` calls passed, by (execution, unit); safe from several threads."""

    def __init__(self, size: int = MAX_REMEMBERED) -> None:
        self.size = size
        self._fns: OrderedDict[tuple[str, str], Callable[..., Any]] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, execution_id: str, unit: str, fn: Callable[..., Any]) -> None:
        with self._lock:
            self._fns[(execution_id, unit)] = fn
            self._fns.move_to_end((execution_id, unit))
            while len(self._fns) > self.size:
                self._fns.popitem(last=False)

    def get(self, execution_id: str, unit: str) -> Callable[..., Any] | None:
        with self._lock:
            return self._fns.get((execution_id, unit))

    def clear(self) -> None:
        with self._lock:
            self._fns.clear()


class CodeRuntime(CodeReplayer):
    """A `CodeReplayer` with a cache of paused instances; one per process is enough (thread-safe)."""

    def __init__(self, registry: Workflows | None = None, cache_size: int = DEFAULT_CACHE_SIZE,
                 cache_units: int = DEFAULT_CACHE_UNITS, closures: Closures | None = None) -> None:
        self.closures: Closures = closures if closures is not None else Closures()
        super().__init__(registry if registry is not None else REGISTRY, self.closures)
        self.cache_size = cache_size
        self.cache_units = cache_units  # live units (≈ parked branches) of every cached instance
        self._weights: dict[str, int] = {}
        self._cache: OrderedDict[str, Instance] = OrderedDict()
        # execution id -> the thread its instance's greenlet belongs to: the Thread object, not its ident,
        # which the OS reuses once a thread ends (orbit dev may start a new invocation thread at any time)
        self._homes: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def _take(self, wf: CodeWorkflow, state: ExecutionState) -> Instance | None:
        """Remove and return the cached instance when it may go on: one decision uses it at a time."""
        with self._lock:
            self._weights.pop(state.id, None)
            home = self._homes.pop(state.id, None)
            inst = self._cache.pop(state.id, None)
        if inst is None:
            return None
        here = home is threading.current_thread()
        if here and still_valid(inst, wf, state):
            return inst
        inst.discard(unwind=here)  # paused on another thread's greenlet: replayed cold here
        return None

    def _put(self, execution_id: str, inst: Instance) -> None:
        if self.cache_size <= 0:
            inst.discard()
            return
        evicted: list[tuple[Instance, threading.Thread | None]] = []
        me = threading.current_thread()
        with self._lock:
            old = self._cache.pop(execution_id, None)
            if old is not None and old is not inst:
                evicted.append((old, self._homes.get(execution_id)))
            self._cache[execution_id] = inst
            self._homes[execution_id] = me
            self._weights[execution_id] = len(inst.replay.state.active)
            while len(self._cache) > self.cache_size or (
                    len(self._cache) > 1 and sum(self._weights.values()) > self.cache_units):
                eid, victim = self._cache.popitem(last=False)
                self._weights.pop(eid, None)
                evicted.append((victim, self._homes.pop(eid, None)))
        for e, home in evicted:
            e.discard(unwind=home is me)

    def forget(self, execution_id: str | None = None) -> None:
        """Drop cached instances (all, or one execution's)."""
        with self._lock:
            if execution_id is None:
                victims = [(i, self._homes.get(eid)) for eid, i in self._cache.items()]
                self._cache.clear()
                self._weights.clear()
                self._homes.clear()
            else:
                inst = self._cache.pop(execution_id, None)
                self._weights.pop(execution_id, None)
                home = self._homes.pop(execution_id, None)
                victims = [] if inst is None else [(inst, home)]
        me = threading.current_thread()
        for inst, home in victims:
            inst.discard(unwind=home is me)


_DEFAULT = CodeRuntime()


def default_runtime() -> CodeRuntime:
    """The process's code runtime: the one an engine uses when it is given none."""
    return _DEFAULT


def runtime_of(engine: Any) -> CodeRuntime:
    """The code runtime `engine` decides with (its own, else the process's)."""
    rt = getattr(engine, "code_runtime", None)
    return rt if rt is not None else _DEFAULT

