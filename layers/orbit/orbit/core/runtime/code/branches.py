"""One branch of a group: its own replay (positions under a key prefix) run on its own greenlet.

A branch is a function of its own `ctx` (`fn(ctx)`, `fn(ctx, item)`, `fn(ctx, item, index)`).
Like the workflow function itself (`code/instance.py`) it runs on a greenlet (no OS thread)
so it can stop at any durable call and go on later. Branches never run at the same time as each other or as
their parent: the group (`code/group.py`) runs one branch until it waits or ends, then the
next, in index order, so a replay stays a pure function of the state.

`BranchReplay` shares everything recorded with the execution's replay (the state, the cache
witness, compensations, progress, the outbox) and keeps its own position, key prefix, clock
and random draws, so a branch replays the same whether its siblings already ran or not.
"""

from __future__ import annotations

import dataclasses
import hashlib
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from greenlet import getcurrent, greenlet

from orbit.core.history.events import TaskError
from orbit.core.history.state import parse_key
from orbit.core.runtime import commands as C
from orbit.core.runtime.code.errors import Cancelled, ReplayStop, StepFailed, Suspended
from orbit.core.runtime.code.limits import check_live
from orbit.core.runtime.code.replay import Replay, running_replay
from orbit.core.runtime.code.specs import Step, as_json

BRANCH_ERROR = "BRANCH_ERROR"  # a branch raised something that is not a TaskError


def current(default: Replay) -> Replay:
    """The replay of the branch whose greenlet calls (the workflow's own: `default`)."""
    return running_replay() or default


class BranchGreenlet(greenlet):  # type: ignore[misc]
    """A branch's greenlet; `.replay` tells a durable call which branch makes it."""

    replay: Replay | None = None


class BranchReplay(Replay):
    """The replay of one branch. Whatever it does not set itself it reads from the root replay."""

    def __init__(self, root: Replay, parent: Replay, prefix: str, now_ms: int,
                 block: Callable[[list[C.Command]], None]) -> None:
        # no Replay.__init__: shared attributes are read through __getattr__ from the root
        self.root = root
        self.parent = parent
        self.prefix = prefix
        self._block = block
        self.position = 0
        self.now_ms = now_ms
        self.draws = 0
        self.cancel_delivered = parent.cancel_delivered
        self.scopes = parent.scopes
        self.watch: list[str] = []  # unit keys looked at since the last resume
        self.poll = False  # resume at the next state whatever changed (a nested group needs it)

    def __getattr__(self, name: str) -> Any:
        if name == "root":
            raise AttributeError(name)
        return getattr(self.root, name)

    # -- the index and the units it asks for ------------------------------------------------
    @property
    def index(self) -> dict[int, str]:
        return self.root.nested_index.setdefault(self.prefix, {})

    def _emit_units(self, position: int, keys: Sequence[str]) -> None:
        check_live(self.root, keys)
        if position:
            self.index.setdefault(position, parse_key(keys[0])[1])
        self.root.emitted_units.extend(keys)
        self.root.known_units += len(keys)
        self.watch.extend(keys)

    def _check_present(self, position: int, key: str, u: Any, requested: dict[str, Any],
                       command: Any = None) -> None:
        self.watch.append(key)
        super()._check_present(position, key, u, requested, command)

    def _wait(self, commands: list[C.Command], updates: bool = True) -> None:
        # update handlers run where the workflow itself blocks (its group's wait), never in a branch
        self._block(commands)

    # -- calls that behave differently inside a branch -------------------------------------
    def step(self, spec: Step) -> Any:
        return super().step(_continue(spec))

    def parallel(self, specs: Sequence[Step], return_exceptions: bool) -> list[Any]:
        return super().parallel([_continue(s) for s in specs], return_exceptions)

    def map(self, spec: Step, items: list[Any], concurrency: int | None,
            tolerated_failures: int) -> list[Any]:
        return super().map(_continue(spec), items, concurrency, tolerated_failures)

    def await_unit(self, kind: str, label: str, make: Callable[[str], C.Command], fail_run: bool,
                   values: Any = None, **names: Any) -> Any:
        if kind == "workflow":  # a child that fails fails its branch, not the execution
            inner = make

            def make(key: str) -> C.Command:  # the branch's version of the command
                c = inner(key)
                return dataclasses.replace(c, on_exhausted=C.CONTINUE_WORKFLOW) \
                    if isinstance(c, C.LinkChild) else c
            fail_run = False
        return super().await_unit(kind, label, make, fail_run, values, **names)

    def progress(self, data: Any) -> None:
        self.root.progress(data)

    def draw(self, purpose: str) -> bytes:
        self.draws += 1
        seed = f"{self.execution_id}\x00{self.prefix}{purpose}\x00{self.draws}"
        return hashlib.sha256(seed.encode()).digest()


def _continue(spec: Step) -> Step:
    """Inside a branch a failed step fails the branch (its StepFailed is raised there); the
    group's completion policy decides what that means for the workflow."""
    return dataclasses.replace(spec, on_exhausted=C.CONTINUE_WORKFLOW) \
        if spec.on_exhausted == C.FAIL_RUN else spec


class Branch:
    """A branch function on its greenlet, handed the turn by its group and handing it back."""

    def __init__(self, name: str, fn: Callable[..., Any], args: tuple[Any, ...], replay: BranchReplay,
                 ctx: Any) -> None:
        self.name = name
        self.index = 0  # its place in the group
        self.fn, self.args = fn, args
        self.replay = replay
        self.ctx = ctx
        replay._block = self._block
        self.commands: list[C.Command] = []
        self.done = False
        self.outcome: tuple[str, Any] = ("", None)  # ("ok", value) | ("err", TaskError) | ("raise", exc)
        self._discarded = False
        self._g: BranchGreenlet | None = None

    @property
    def end_ms(self) -> int:
        return self.replay.now_ms

    # -- group side ----------------------------------------------------------------------------
    def run(self) -> None:
        """Start (or resume) the branch; return once it waits again or ended."""
        self.replay.watch, self.replay.poll = [], False
        if self._g is None:
            self._g = BranchGreenlet(self._main)  # its parent: the group's greenlet, which it returns to
            self._g.replay = self.replay
            commands = self._g.switch()
        else:
            self._g.parent = getcurrent()
            commands = self._g.switch(True)
        self.commands = commands or []

    def discard(self) -> None:
        """Let a waiting branch unwind; returns once it has."""
        if self._discarded:
            return
        self._discarded = True
        g, self._g = self._g, None
        if g is not None and not self.done and not g.dead:
            g.parent = getcurrent()
            g.throw(Suspended())

    # -- branch side -----------------------------------------------------------------------------
    def _block(self, commands: list[C.Command]) -> None:
        if self._discarded:
            raise Suspended()
        assert self._g is not None and self._g.parent is not None
        if not self._g.parent.switch(commands) or self._discarded:  # back to the group, until its turn
            raise Suspended()
        self.replay.watch, self.replay.poll = [], False

    def _main(self) -> None:
        try:
            value = self.fn(self.ctx, *self.args)
            self.replay.check_finished()
            self.outcome = ("ok", as_json(value, f"the result of branch {self.replay.prefix!r}"))
        except Suspended:
            return  # discarded: nobody listens any more
        except Cancelled as e:
            self.outcome = ("cancelled", e)
        except ReplayStop as e:
            self.outcome = ("raise", e)
        except StepFailed as e:
            self.outcome = ("err", e.error)
        except TaskError as e:
            self.outcome = ("err", e)
        except Exception as e:  # noqa: BLE001 - every way out of a branch is an outcome
            self.outcome = ("err", _branch_error(e))
        except BaseException as e:  # noqa: BLE001
            self.outcome = ("raise", e)
        self.done = True  # returning hands the turn back to the group (with no commands)


def _branch_error(e: Exception) -> TaskError:
    tb = traceback.extract_tb(e.__traceback__)
    where = f" at {tb[-1].filename}:{tb[-1].lineno}" if tb else ""
    return TaskError(BRANCH_ERROR, f"{type(e).__name__}: {e}{where}", retryable=False,
                     details={"exception": type(e).__name__})
