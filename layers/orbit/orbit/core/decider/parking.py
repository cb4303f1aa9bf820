"""Parked executions: when they are tried again, and how they come back.

An execution parks when its replay cannot go on (the code asks for another
call than history recorded, or its build is not deployed and the deployed one
diverges, or the code raised an unexpected exception: a bug, `bugs_park`).
It keeps recording answers, signals and cancels while parked. The
engine runs the runtime again on every decision of a parked execution (a
result, a signal, its retry timer, `orbit unpark`): as soon as the replay is
clean (a deploy brought compatible code back, or the bug was fixed) it records
`ExecutionUnparked` and carries on with what the replay asked for, so whatever
arrived while it was parked is handled then.

Nothing else would wake a parked execution after a deploy, so each park
arms a retry: one minute after parking, then doubling up to an hour, for
RETRY_WINDOW_MS (7 days) after it parked; later only a message or `orbit
unpark` tries it again (a simulated or local run does not spin on it forever).
A retry that still diverges records `ExecutionParked` again (with the divergence
seen now and the next retry time): at most about 30 events a day, ~180 in all.
"""

from __future__ import annotations

from orbit.core.decider.context import Ctx
from orbit.core.history.events import BuildSwitched, ExecutionParked, ExecutionUnparked, TaskError
from orbit.core.history.state import UNPARK_WAKE, ExecutionState
from orbit.core.runtime.code.errors import is_workflow_bug
from orbit.core.runtime.commands import Command, Fail, Park, SwitchBuild

FIRST_RETRY_MS = 60_000
MAX_RETRY_MS = 3_600_000
RETRY_WINDOW_MS = 7 * 86_400_000


def next_retry_ms(state: ExecutionState, now_ms: int, reset: bool = False) -> int | None:
    """When to try a parked execution again: the last interval doubled, within [1 min, 1 h];
    None once it has been parked for RETRY_WINDOW_MS (`orbit unpark` still tries, and once more
    a minute later)."""
    if reset:
        return now_ms + FIRST_RETRY_MS
    since = state.parked_since_ms if state.parked is not None else now_ms
    if since is not None and now_ms - since >= RETRY_WINDOW_MS:
        return None
    last = state.wakeups.get(UNPARK_WAKE)
    prev = last - state.parked_at_ms if last is not None and state.parked_at_ms is not None else 0
    return now_ms + min(MAX_RETRY_MS, max(FIRST_RETRY_MS, 2 * prev))


def bugs_park(workflow: object, commands: list[Command]) -> list[Command]:
    """A code workflow's unexpected exception (a bug: `code_errors.workflow_bug`) parks the
    execution instead of failing it, so a deploy that fixes the code carries it on (the retries
    below, or any message, replay it; `try_unpark`). `on_workflow_error="fail"` keeps the failure."""
    if getattr(workflow, "on_workflow_error", "fail") != "park":
        return commands
    return [Park(c.error) if isinstance(c, Fail) and is_workflow_bug(c.error) else c for c in commands]


def park(ctx: Ctx, error: TaskError) -> None:
    """Park a running execution (a runtime's Park command)."""
    if ctx.state.parked is None:
        ctx.emit(ExecutionParked(error, next_retry_ms(ctx.state, ctx.now, reset=True)))


def switch_build(ctx: Ctx, c: SwitchBuild) -> None:
    if ctx.state.build == c.from_build and c.to_build != c.from_build:
        ctx.emit(BuildSwitched(c.from_build, c.to_build))


def try_unpark(ctx: Ctx, commands: list[Command], asked: bool) -> list[Command] | None:
    """For a parked execution, given what its runtime asks now: the commands to carry out once it
    un-parks, or None while it stays parked (re-recorded when its retry is due or `asked`)."""
    s = ctx.state
    stuck = next((c for c in commands if isinstance(c, Park)), None)
    if stuck is None:
        build = next((c.to_build for c in commands if isinstance(c, SwitchBuild)), s.build)
        ctx.emit(ExecutionUnparked(reason=f"the history replays cleanly on build {build!r}"))
        return commands
    due = s.wakeups.get(UNPARK_WAKE)
    if asked or (due is not None and due <= ctx.now):
        ctx.emit(ExecutionParked(stuck.error, next_retry_ms(s, ctx.now, reset=asked)))
    return None
