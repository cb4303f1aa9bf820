"""Running a group of branches: the group's unit, the branches' turns, the completion policy.

A group (`ctx.parallel`/`ctx.map` over callables, `ctx.race`, ...) takes one position in its
parent and records one unit, `<position>.<group>()` (a StepFanOut holding the branch names or
map items, then StepSucceeded/StepFailed holding the outcome). Its branches key their calls
under it (`code/keys.py`).

Each decision the group resumes, in index order, only the branches whose awaited units changed,
then handles the branches that ended in the order they ended (by the time of the last result
each consumed, then index), which is also when a branch waiting for a free slot (`concurrency`)
starts: at that time. So a cold replay starts every branch at the same time, in the same order,
as the live run did. Once the outcome is recorded, a replay returns it and never runs the
branches again (they are done; their calls stay in history).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from orbit.core.history.events import TaskError
from orbit.core.history.state import PENDING
from orbit.core.runtime import commands as C
from orbit.core.runtime.code.branch_policy import BRANCHES_FAILED, BranchesFailed, Policy, failure, success
from orbit.core.runtime.code.branches import Branch, BranchReplay
from orbit.core.runtime.code.compare import describe_call, items_differences, recorded_call
from orbit.core.runtime.code.errors import StepFailed, non_determinism
from orbit.core.runtime.code.keys import branch_prefix, group_key
from orbit.core.runtime.code.replay import Replay, private
from orbit.core.runtime.code.specs import as_json
from orbit.core.runtime.code.wakeups import Wakeups

Body = tuple[Callable[..., Any], tuple[Any, ...]]  # a branch function and its arguments after ctx
MakeCtx = Callable[[Replay], Any]


def root_of(replay: Replay) -> Replay:
    return replay.root if isinstance(replay, BranchReplay) else replay


def run_group(parent: Replay, make_ctx: MakeCtx, kind: str, names: list[str], record: list[Any],
              bodies: list[Body], policy: Policy, limit: int | None = None) -> Any:
    """Run the branches under the group's unit; return its recorded output, or raise its failure
    (`BranchesFailed`) or whatever stops the workflow (cancellation, non-determinism, ...)."""
    position = parent.next_position()
    base = group_key(parent.prefix, position, kind)
    requested = describe_call(kind, base)
    record = as_json(record, f"the items of {base!r}")
    u = parent.state.units.get(base)
    if u is None and len(record) > C.MAX_FOR_ITEMS:  # a new group only: one recorded before replays
        raise C.too_many_items(base, kind, len(record))
    if u is None:
        parent._check_absent(position, requested)
    else:
        parent._check_present(position, base, u, requested)
        differs = items_differences(u.input, record, parent.state.hooks)
        if differs:
            raise non_determinism(position, recorded_call(base, u), requested, parent.execution_id, differs)
    opening: list[C.Command] = []
    if u is None or u.status == PENDING:
        parent._maybe_deliver_cancel()
        parent._emit_units(position, [base])
        opening = [C.FanOut(base, record)]
    if u is None or not u.terminal:
        group = _Group(parent, make_ctx, base, names, bodies, policy, limit)
        try:
            closing = group.drive(opening)
        finally:
            group.discard()
        if closing:
            parent._wait(closing)
    elif u.terminal and parent.state.next_compensation() is not None and \
            any(k.startswith(base + "/") for k in parent.state.compensable):
        _collect_compensations(parent, make_ctx, base, names, bodies)
    while not parent.state.units[base].terminal:
        parent._wait([])
    try:
        return parent._ended(base, parent.state.units[base], fail_run=False)
    except StepFailed as e:
        if e.step == base and e.code == BRANCHES_FAILED:
            raise BranchesFailed(base, e.error) from None
        raise


def _collect_compensations(parent: Replay, make_ctx: MakeCtx, base: str, names: list[str],
                           bodies: list[Body]) -> None:
    """The execution is winding down and steps of this ended group declared `compensate=`: replay
    the branches that ran (their calls are all recorded) so their compensations are known again.
    Nothing they would ask for is sent; how they end does not matter."""
    group = _Group(parent, make_ctx, base, names, bodies, Policy(), None)
    try:
        for i, name in enumerate(names):
            prefix = branch_prefix(base, name)
            if any(k.startswith(prefix) for k in parent.state.compensable):
                group._start(i, parent.now_ms)
    finally:
        group.discard()


class _Group:
    def __init__(self, parent: Replay, make_ctx: MakeCtx, base: str, names: list[str], bodies: list[Body],
                 policy: Policy, limit: int | None) -> None:
        self.parent, self.root, self.make_ctx = parent, root_of(parent), make_ctx
        self.base, self.names, self.bodies, self.policy = base, names, bodies, policy
        self.limit = min(limit or len(names), len(names))
        self.shielded = any(scope.shielded for scope in parent.scopes)
        self.branches: list[Branch] = []
        self.heap: list[tuple[int, int]] = []
        self.results: list[Any] = [None] * len(names)
        self.errors: dict[str, TaskError] = {}
        self.succeeded = self.failed = 0
        self.wakeups = Wakeups()

    def drive(self, commands: list[C.Command]) -> list[C.Command]:
        """Run branches until the policy says the group is done; return the commands that end it."""
        if not self.names:
            return commands + [C.RecordResult(self.base, success([], {}))]
        for i in range(self.limit):
            commands += self._start(i, self.parent.now_ms)
        while True:
            u = self.parent.state.units.get(self.base)
            if u is not None and u.terminal:
                return commands  # ended from outside (the workflow was cancelled): the caller sees it
            for b in self.wakeups.due(self.root.state, self.root.abort_kind(), self.branches):
                b.run()
                commands += self._settle(b)
            while self.heap:
                end, i = heapq.heappop(self.heap)
                verdict = self._count(i)
                if verdict is not None:
                    return commands + self._close(verdict, self.names[i])
                if len(self.branches) < len(self.names):
                    commands += self._start(len(self.branches), end)
            if isinstance(self.parent, BranchReplay):  # the parent's own group resumes it on these
                self.parent.watch.extend(self.wakeups.watched())
                self.parent.poll = self.parent.poll or bool(self.wakeups.always)
            self.wakeups.snapshot(self.root.state, self.root.abort_kind())
            self.parent._wait(commands)
            commands = []

    def _start(self, i: int, at_ms: int) -> list[C.Command]:
        prefix = branch_prefix(self.base, self.names[i])
        replay = BranchReplay(self.root, self.parent, prefix, at_ms, lambda _: None)
        fn, args = self.bodies[i]
        b = Branch(self.names[i], fn, tuple(private(a) for a in args), replay, self.make_ctx(replay))
        b.index = i
        self.branches.append(b)
        b.run()
        return self._settle(b)

    def _settle(self, b: Branch) -> list[C.Command]:
        """After a branch's turn: queue it as ended, or note what it waits on."""
        if b.done:
            heapq.heappush(self.heap, (b.end_ms, b.index))
            return []
        self.wakeups.block(b, self.root.state, b.replay.poll)
        return b.commands

    def _count(self, i: int) -> str | None:
        kind, value = self.branches[i].outcome
        name = self.names[i]
        if kind == "raise":
            raise value
        if kind == "cancelled":
            if self.root.abort_kind() in ("cancelled", "timed_out") and not self.shielded:
                raise self.parent._cancel_exception()
            kind, value = "err", TaskError("CANCELLED", str(value) or "cancelled", retryable=False)
        if kind == "ok":
            self.results[i] = value
            self.succeeded += 1
        else:
            self.errors[name] = value
            self.failed += 1
        return self.policy.verdict(len(self.names), self.succeeded, self.failed)

    def _close(self, verdict: str, last: str) -> list[C.Command]:
        """The group is done: stop the branches still running, record the outcome."""
        self.discard()
        prefix = self.base + "/"
        reason = f"{self.base} ended" + (f" (won by {last})" if self.policy.first else "")
        state = self.root.state
        cancels: list[C.Command] = [C.CancelUnit(k, reason) for k in state.active if k.startswith(prefix)]
        if verdict == "ok":
            out = success(self.results, self.errors)
            if self.policy.first:
                out["winner"] = last
            return cancels + [C.RecordResult(self.base, out)]
        return cancels + [C.FailStep(self.base, failure(self.base, self.names, self.results, self.errors),
                                     continue_workflow=True)]

    def discard(self) -> None:
        for b in self.branches:
            b.discard()
