"""Recovery decisions: redrive an ended execution, seed a fork, link a fork to its original.

Pure like the rest of the decider. What may be redriven (`redrive_refusal`):
- only FAILED and TIMED_OUT executions (a RUNNING one is still going; a COMPLETED one has its
  answer, fork it to run steps again; a CANCELLED one was stopped on purpose);
- not a parked one (its build is missing: it would park again);
- not one whose compensation (or a code workflow's cleanup) ran: those units undid the work of
  succeeded steps, and going on from their outputs would build on effects that no longer exist.
What runs again (`redrive_units`): failed and cancelled units (timeouts end a unit FAILED),
a `for` step's failed and cancelled elements (its succeeded ones keep their outputs), and
failed or cancelled child units, whose child executions are redriven with the parent.
"""

from __future__ import annotations

import copy
from typing import Any

from orbit.core.decider.context import Ctx
from orbit.core.history.effects import LinkFork, NotifyParent, RedriveChild
from orbit.core.history.events import (
    CANCELLED,
    ExecutionForked,
    ExecutionRedriven,
    ForkCreated,
    Recorded,
    StepSkipped,
    StepSucceeded,
    TaskError,
    TimerFired,
)
from orbit.core.history.messages import RedriveMessage
from orbit.core.history.state import FAILED, SKIPPED, SUCCEEDED, TIMED_OUT, ExecutionState, parse_key

REDRIVABLE = (FAILED, TIMED_OUT)


def redrive_refusal(state: ExecutionState, by_parent: bool = False) -> str | None:
    """Why `state` cannot be redriven (one line), or None. A parent redriving its child may also
    redrive a CANCELLED child: the parent cancelled it while winding down."""
    s = state
    allowed = REDRIVABLE + ((CANCELLED,) if by_parent else ())
    if s.status not in allowed:
        hint = {
            "RUNNING": "it is still running",
            "COMPENSATING": "it is compensating",
            "COMPLETED": f"it continued as new as {s.continued_as!r}; redrive that one" if s.continued_as
            else "it completed; fork it (orbit fork) to run steps again",
            "CANCELLED": "it was cancelled on purpose; start it again or fork it",
        }.get(s.status, "")
        return f"execution {s.id!r} is {s.status}: only FAILED or TIMED_OUT executions can be redriven" + (
            f" ({hint})" if hint else ""
        )
    if s.parked is not None:
        return (
            f"execution {s.id!r} was parked ({s.parked.code}) before it ended: its build is not "
            "available, a redrive would park it again"
        )
    if s.compensation_order or s.ran_compensation:
        undone = ", ".join(s.compensation_order) or "its cleanup"
        return (
            f"execution {s.id!r} already ran its compensation ({undone}): the work of its succeeded "
            "steps was undone, so going on from their outputs is not safe; start a new execution"
        )
    return None


def redrive_units(state: ExecutionState) -> tuple[list[str], list[str]]:
    """(units that run again, child execution ids redriven with them), in unit order."""
    again = {k for k, u in state.units.items() if u.status in (FAILED, CANCELLED) and not parse_key(k)[0]}
    steps, children = [], []
    for key, u in state.units.items():
        if key not in again:
            continue
        _, base, index = parse_key(key)
        if index is not None and base not in again:
            continue  # an element of a `for` step that ended anyway (tolerated failures): it stays
        steps.append(key)
        if u.child_id:
            children.append(u.child_id)
    return steps, children


def redrive(ctx: Ctx, m: RedriveMessage) -> bool:
    """Record the redrive (True), or, refused, answer a redriving parent (False)."""
    s = ctx.state
    if m.parent_id is not None and s.continued_as:  # the parent waits for the end of the chain
        ctx.effect(RedriveChild(m.parent_id, m.unit, s.continued_as, m.id))
        return False
    refusal = redrive_refusal(s, by_parent=m.parent_id is not None)
    if refusal is not None:
        # An ended child that cannot go on answers now; one still winding down (the parent's cancel)
        # answers when it ends, with the notice the parent has not seen yet.
        if m.parent_id is not None and s.parent and s.terminal:
            _answer_parent(ctx, m, refusal)
        return False
    steps, children = redrive_units(s)
    timeout = getattr(ctx.workflow, "timeout_ms", None)
    n = s.redrive_count + 1
    ctx.emit(ExecutionRedriven(n, steps, children, ctx.now + timeout if timeout is not None else None, m.id))
    for child in children:
        ctx.effect(RedriveChild(s.id, s.children.get(child, ""), child, f"redrive:{s.id}#r{n}"))
    return True


def _answer_parent(ctx: Ctx, m: RedriveMessage, refusal: str) -> None:
    s = ctx.state
    error = s.error or TaskError("FAILED", f"child ended {s.status}", retryable=False)
    if s.status != "COMPLETED":
        error = error.replace(message=f"{error.message} (not redriven: {refusal})")
    ctx.effect(
        NotifyParent(
            str((s.parent or {}).get("execution_id", "")),
            str((s.parent or {}).get("step", "")),
            s.id,
            s.status,
            s.output if s.status == "COMPLETED" else None,
            None if s.status == "COMPLETED" else error,
            tag=m.id,
        )
    )


def answer_unstarted_child(ctx: Ctx, m: RedriveMessage) -> None:
    """A redriving parent asks a child that was cancelled before it ever started: it cannot go on."""
    if m.parent_id is None:
        return
    ctx.effect(
        NotifyParent(
            m.parent_id,
            m.unit,
            ctx.state.id,
            "CANCELLED",
            None,
            TaskError(CANCELLED, "the child was cancelled before it started; it cannot be redriven", False),
            tag=m.id,
        )
    )


# ---------------------------------------------------------------------------------------- fork
def fork_units(state: ExecutionState, records: list[Recorded], from_step: str) -> dict[str, Any]:
    """The units of the original a fork from `from_step` reuses: top-level units that succeeded
    (or were skipped) before `from_step` first did anything; key -> what replay needs of them.
    `from_step` must be known (ValueError otherwise: see `check_fork_step`)."""
    first = next((r.seq for r in records if _names_step(r, from_step)), state.last_seq + 1)
    ended: dict[str, int] = {}
    for r in records:
        e = r.event
        if isinstance(e, (StepSucceeded, TimerFired, StepSkipped)):
            ended[e.step] = r.seq
    out: dict[str, Any] = {}
    for key, u in state.units.items():
        comp, _, index = parse_key(key)
        if comp or index is not None or key == from_step or u.status not in (SUCCEEDED, SKIPPED):
            continue
        if u.kind == "on_signal" or key.startswith("on_signal:"):
            continue  # handler instances answered the original's arrivals, keyed by its seqs
        if ended.get(key, first) >= first:
            continue
        rec: dict[str, Any] = {"status": u.status, "attempt": u.attempt, "kind": u.kind, "task": u.task,
                               "output": u.output}
        if u.signal is not None:
            rec["signal"] = u.signal
        for name in ("input", "retry", "timeout_ms", "queue_timeout_ms", "heartbeat_timeout_ms"):
            if getattr(u, name) is not None:  # what a code workflow's replay compares (code_compare)
                rec[name] = copy.deepcopy(getattr(u, name))
        out[key] = rec
    return out


def _names_step(r: Recorded, step: str) -> bool:
    unit = getattr(r.event, "step", None)
    if not isinstance(unit, str):
        return False
    comp, base, _ = parse_key(unit)
    return not comp and base == step


def fork_step_problem(state: ExecutionState, workflow: Any, from_step: str) -> str | None:
    """Why `from_step` is no step of this execution (one line naming what it knows), or None."""
    steps = getattr(workflow, "steps", None)
    known = [k for k in state.units if not parse_key(k)[0] and parse_key(k)[2] is None]
    if isinstance(steps, dict):
        known = list(dict.fromkeys([*steps, *known]))
    if from_step in known:
        return None
    shown = ", ".join(known[:20]) + (f", ... ({len(known)} in all)" if len(known) > 20 else "")
    asked = from_step if len(from_step) <= 100 else from_step[:100] + "..."
    return f"execution {state.id!r} has no step {asked!r}; its steps: {shown or 'none yet'}"


def seed_fork(ctx: Ctx, fork: dict[str, Any]) -> None:
    """The first decision of a fork: take the original's outputs, and link the original to it."""
    original, step = str(fork.get("execution_id") or ""), str(fork.get("step") or "")
    units = fork.get("units") if isinstance(fork.get("units"), dict) else {}
    ctx.emit(ExecutionForked(original, step, dict(units or {})))
    if original:
        ctx.effect(LinkFork(original, ctx.state.id, step))


def record_fork(ctx: Ctx, fork_id: str, from_step: str) -> None:
    if fork_id and fork_id not in ctx.state.forked_to:
        ctx.emit(ForkCreated(fork_id, from_step))
