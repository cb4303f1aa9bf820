"""One live run of a workflow function, paused at its pending durable call.

The function runs on a greenlet of its own so it can stop in the middle of
its body (a plain `(ctx, input)` function cannot be resumed any other way) and
wait there for the next state. No OS thread is started: `feed` switches into
the workflow's greenlet on the calling thread and gets control back when the
workflow stops again (waiting, or finished), so the replay stays a pure
function of the state, only cheaper (docs/decisions/width-greenlets.md).
A greenlet belongs to the thread that created it: the host that caches
instances (orbit/service/replay_host.py) feeds one only on the thread that
started it, and replays cold elsewhere. This module knows nothing of threads.

A fresh instance replays from the first call (cold); a cached one only
consumes what is new (warm). Discarding a waiting instance makes its pending
call raise `Suspended` (a BaseException) so the function unwinds.
"""

from __future__ import annotations

import os
import traceback
from typing import Any

from greenlet import getcurrent, greenlet

from orbit.core.history.events import TaskError
from orbit.core.history.hook_tokens import KeySource
from orbit.core.history.state import ExecutionState
from orbit.core.history.storable import NotStorable
from orbit.core.runtime import commands as C
from orbit.core.runtime.code.context import WorkflowContext
from orbit.core.runtime.code.errors import (
    Cancelled,
    ContinuedAsNew,
    Diverged,
    FailRun,
    Stalled,
    StepFailed,
    Suspended,
    WorkflowTimedOut,
)
from orbit.core.runtime.code.replay import Replay, private
from orbit.core.runtime.code.specs import as_json
from orbit.errors import OrbitError

WORKFLOW_ERROR = "WORKFLOW_ERROR"  # code raised something that is not a TaskError


_ORBIT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def _park(error: Exception, code: str) -> list[C.Command]:
    return [C.Park(TaskError(code, str(error), retryable=False))]


class Instance:
    """A workflow function and its replay, driven one state at a time."""

    def __init__(self, workflow: Any, execution_id: str, closures: Any = None) -> None:
        self.workflow = workflow
        self.replay = Replay(execution_id, self._block, closures)
        self.ctx = WorkflowContext(self.replay, workflow)
        self.seen_seq = -1
        self.redrives_seen = 0  # state.redrive_count at the last feed
        self.origin: tuple[int, Any] | None = None  # (created_at_ms, input) of the execution it replays
        self.finished = False
        self._discarded = False
        self._g: greenlet | None = None  # the function's greenlet, once started

    # -- decider side --------------------------------------------------------------------------
    def feed(self, state: ExecutionState, keys: KeySource | None = None) -> list[C.Command]:
        """Run the workflow against `state` until it waits or ends; return its commands. `keys`:
        the decision's stack-key source, for `ctx.hook_token`. Only on the thread that started it."""
        if self.finished or self._discarded:
            raise RuntimeError("a finished or discarded workflow instance cannot be fed")
        self.seen_seq = state.last_seq
        self.replay.keys = keys
        if self._g is None:
            self.origin = (state.created_at_ms, state.input)
            self.replay.begin(state)
            self._g = greenlet(self._main)  # its parent: this greenlet, which it returns to
            commands = self._g.switch(private(state.input))
        else:
            self._g.parent = getcurrent()  # the feeder it hands the turn back to (and returns to)
            commands = self._g.switch(state)
        if isinstance(commands, Stalled):
            raise commands  # the decision fails; the instance is finished, never fed again
        return list(commands)

    def discard(self, unwind: bool = True) -> None:
        """Let a waiting function unwind (its pending call raises `Suspended`) at once. `unwind`
        False (the caller is not on the thread that started it, which the host knows): it is left
        to the garbage collector, which raises GreenletExit in it on its own thread."""
        if self._discarded:
            return
        self._discarded = True
        g, self._g = self._g, None
        if g is not None and not self.finished and not g.dead and unwind:
            g.parent = getcurrent()
            g.throw(Suspended())

    # -- workflow side -------------------------------------------------------------------------
    def _block(self, commands: list[C.Command]) -> None:
        if self._discarded:
            raise Suspended()
        assert self._g is not None and self._g.parent is not None
        state = self._g.parent.switch(commands)  # to the feeder; back with the next state
        if state is None or self._discarded:
            raise Suspended()
        self.replay.begin(state)

    def _main(self, input: Any) -> list[C.Command] | Stalled:
        """The greenlet's body: what it returns goes to its parent, the feeder."""
        try:
            commands = self._run(input)
        except Suspended:
            return []  # discarded while waiting: nobody listens any more
        except Stalled as e:
            self.finished = True
            return e  # raised again by feed, on the decider's side
        except BaseException as e:  # noqa: BLE001 - a runaway BaseException must not kill the decider
            commands = _park(RuntimeError(f"workflow code died: {type(e).__name__}: {e}"), WORKFLOW_ERROR)
        self.finished = True
        return commands

    def _run(self, input: Any) -> list[C.Command]:
        """Call the function; turn how it ended into the final commands."""
        r = self.replay
        try:
            output = self.workflow.fn(self.ctx, input)
            r.check_finished()
            final = self._after_return(output)
        except Diverged as e:
            details = {"position": e.position, "recorded": e.recorded, "requested": e.requested}
            if e.differs:
                details["differs"] = e.differs
            return r.take_outbox() + [C.Park(TaskError("NON_DETERMINISM", str(e.error), False, details))]
        except (ContinuedAsNew, FailRun, Exception) as e:  # noqa: BLE001 - every way out becomes a command
            return r.take_outbox() + [self._raised(e)]
        return r.take_outbox() + final

    def _raised(self, e: BaseException) -> C.Command:
        if isinstance(e, ContinuedAsNew):
            return C.ContinueAsNew(e.input)
        if isinstance(e, FailRun):
            return C.Fail(e.error)  # during cleanup the engine records it as failed compensation
        if isinstance(e, Cancelled) or self.replay.abort_kind() in ("cancelled", "timed_out"):
            # Cancelled or timed out: however the cleanup ended, that is the outcome.
            return self._stopped(e if isinstance(e, Cancelled) else Cancelled(""))
        if isinstance(e, StepFailed):
            return C.Fail(e.error.replace(message=f"step {e.step!r} failed: {e.error.message}"))
        if isinstance(e, NotStorable):  # a value the code passed or returned: VALUE_NOT_STORABLE, located
            return C.Fail(e.replace(message=e.message + _where(e)))
        if isinstance(e, TaskError):
            return C.Fail(e)
        if isinstance(e, OrbitError):
            return C.Fail(TaskError(WORKFLOW_ERROR, f"{type(e).__name__}: {e}", retryable=False))
        where = _where(e)
        return C.Fail(TaskError(WORKFLOW_ERROR, f"{type(e).__name__}: {e}{where}", retryable=False,
                                details={"exception": type(e).__name__}))

    def _after_return(self, output: Any) -> list[C.Command]:
        kind = self.replay.abort_kind()
        if kind == "cancelled":
            return [C.Cancel(str((self.replay.state.abort or {}).get("reason") or ""))]
        if kind == "timed_out":
            return [C.Timeout("workflow timed out")]
        return [C.Complete(as_json(output, "the workflow's output", "output"))]

    def _stopped(self, e: Cancelled) -> C.Command:
        if isinstance(e, WorkflowTimedOut) or self.replay.abort_kind() == "timed_out":
            return C.Timeout(e.reason, getattr(e, "deadline_ms", None))
        return C.Cancel(e.reason)


def _where(e: BaseException) -> str:
    """` at FILE:LINE` of the deepest frame in the user's code: an error raised by an orbit helper (a
    value that is not JSON, a bad argument) is the fault of the call that passed it ("<string>"
    frames are generated code, e.g. a dataclass __init__)."""
    tb = traceback.extract_tb(e.__traceback__)
    mine = [f for f in tb if not f.filename.startswith((_ORBIT_DIR, "<"))] or tb
    return f" at {mine[-1].filename}:{mine[-1].lineno}" if mine else ""
