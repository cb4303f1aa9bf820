"""Schedule operations and firing: load, decide (pure, `orbit.core.schedule`), claim, act, advance.

Every change follows the same three steps as a decision on a history:
1. claim: the new state, with the starts and cancels it calls for listed in
   `pending` / `cancels`, is written conditionally on the revision read;
2. act: each pending run is started (`Engine.start` with the id
   `<schedule id>:<occurrence>`, idempotent) and each cancel sent;
3. advance: the state is written again, conditionally, with both lists empty.
Whoever loads a schedule with a non-empty `pending` (a redelivered fire, the
next operation) carries it out first, so a crash anywhere starts nothing
twice and loses nothing. The clock (EventBridge Scheduler on AWS, the local
stack's virtual clock) is armed for the next fire before the claim, so a crash
never leaves a schedule without its next fire.

A run is started with the schedule as its parent (`schedule:<id>`): when it
ends the engine's ordinary parent notice comes back to the decision queue and
is handled here (buffered occurrences start, `pause_on_failure` applies).
"""

from __future__ import annotations

import builtins
import logging
from typing import Any, Callable

from orbit.core.history.messages import ChildDoneMessage, ScheduleFire
from orbit.core.schedule import state as st
from orbit.core.schedule.config import check_overlap, check_schedule_id, parse_config
from orbit.core.schedule.times import parse_time
from orbit.errors import (
    ConflictError,
    ExecutionEnded,
    ExecutionExists,
    NotFound,
    OrbitError,
    UnknownWorkflow,
    ValidationError,
)

log = logging.getLogger("orbit.schedules")
MAX_RETRIES = 8
MAX_DELAY_S = 900  # SQS's longest DelaySeconds
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT")
FIRE = ScheduleFire.KIND


def is_schedule_message(body: dict[str, Any]) -> bool:
    eid = body.get("execution_id")
    return body.get("kind") == FIRE or (isinstance(eid, str) and eid.startswith(st.PARENT_PREFIX))


class ScheduleService:
    def __init__(self, store: Any, clock_arm: Any, engine: Any) -> None:
        self.store, self.arm, self.engine = store, clock_arm, engine

    @property
    def now_ms(self) -> int:
        return int(self.engine.clock.now_ms())

    # ------------------------------------------------------------ operations
    def create(self, raw: dict[str, Any]) -> dict[str, Any]:
        """Create a schedule (the same config again returns it, re-armed; another is refused)."""
        config = parse_config(raw)
        self._check_workflow(config.workflow, config.version)
        st.check_runs(config, self.now_ms)  # bounded, and runs before the year 9999 ends: else a 400
        existing = self.store.get(config.schedule_id)
        if existing is not None:
            s = self._state(*existing)
            if s.config != config:
                raise ExecutionExists(f"schedule:{config.schedule_id}",
                                      f"schedule {config.schedule_id!r} already exists with another config; "
                                      "use update")
        else:
            s = st.new_state(config, self.now_ms)
            try:
                s.rev = self.store.put(config.schedule_id, s.to_dict(), None)
            except ConflictError:
                return self.create(raw)  # created meanwhile: compare with that one
        self._arm(s)
        return s.describe(self.now_ms)

    def update(self, schedule_id: str, raw: dict[str, Any]) -> dict[str, Any]:
        config = parse_config({**raw, "id": schedule_id})
        self._check_workflow(config.workflow, config.version)
        st.check_runs(config, self.now_ms)
        return self._change(schedule_id, lambda s, now, _: st.update(s, config, now),
                            rearm=True).describe(self.now_ms)

    def describe(self, schedule_id: str) -> dict[str, Any]:
        return self._load(schedule_id).describe(self.now_ms)

    def list(self, limit: int = 50, cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        states, nxt = self.store.list(limit, cursor)
        now = self.now_ms
        return [_summary(d, now) for d in states], nxt

    def pause(self, schedule_id: str, note: str = "") -> dict[str, Any]:
        note = _note(note)
        return self._change(schedule_id, lambda s, now, _: st.pause(s, note, now)).describe(self.now_ms)

    def resume(self, schedule_id: str, note: str = "") -> dict[str, Any]:
        note = _note(note)
        return self._change(schedule_id, lambda s, now, r: st.resume(s, note, now, r),
                            check_running=True, rearm=True).describe(self.now_ms)

    def trigger(self, schedule_id: str, overlap: str | None = None) -> str | None:
        """Start a run now (under `overlap`, the schedule's own by default); its id, or None if skipped
        or buffered."""
        if overlap is not None:
            check_overlap(overlap)
        out: list[str | None] = []

        def act(s: st.ScheduleState, now: int, running: set[str]) -> None:
            st._refresh(s, running)  # the same refresh a fire does
            out.append(st.trigger(s, now, overlap))

        self._change(schedule_id, act, check_running=True)
        return out[-1]

    def backfill(
        self, schedule_id: str, start: Any, end: Any, overlap: str | None = None
    ) -> builtins.list[str]:
        """Act on the occurrences in [start, end) as if each fired, under `overlap` (default
        `allow_all`); returns the runs started. The range must be in the past."""
        problems = []
        start_ms = end_ms = 0
        for name, value in (("start", start), ("end", end)):
            try:
                ms = parse_time(value)
            except ValueError as e:
                problems.append(ValidationError(str(e), name))
                continue
            start_ms, end_ms = (ms, end_ms) if name == "start" else (start_ms, ms)
        if problems:
            raise problems[0]
        if end_ms <= start_ms:
            raise ValidationError("must be after `start`", "end")
        if end_ms > self.now_ms:
            raise ValidationError("must not be in the future (a backfill replays the past)", "end")
        policy = check_overlap(overlap or "allow_all")
        s0 = self._load(schedule_id)
        occurrences = s0.config.spec.between(start_ms - 1, end_ms - 1, st.MAX_BACKFILL + 1)
        if len(occurrences) > st.MAX_BACKFILL:
            raise ValidationError(f"covers more than {st.MAX_BACKFILL} occurrences; split it", "end")
        out: list[list[str]] = []

        def act(s: st.ScheduleState, now: int, running: set[str]) -> None:
            st._refresh(s, running)
            out.append(st.backfill(s, occurrences, policy, now))

        self._change(schedule_id, act, check_running=True)
        return out[-1]

    def delete(self, schedule_id: str) -> None:
        check_schedule_id(schedule_id)
        self.arm.arm(schedule_id, None)  # first: a fire after the delete would find nothing anyway
        if not self.store.delete(schedule_id):
            raise NotFound(f"schedule {schedule_id!r} not found")

    # ------------------------------------------------------------ inbound (decision queue)
    def handle(self, body: dict[str, Any]) -> None:
        """A fire from the clock, or the end of a run this schedule started."""
        kind = body.get("kind")
        if kind not in (FIRE, ChildDoneMessage.KIND):
            raise ValidationError(f"unknown schedule message kind {kind!r}", "message.kind")
        if kind == FIRE and self._early(body):
            return
        eid = str(body.get("execution_id") or "")
        sid = eid[len(st.PARENT_PREFIX):]
        try:
            if kind == FIRE:
                fire = ScheduleFire.from_dict(body)
                sid = fire.schedule_id or fire.execution_id[len(st.PARENT_PREFIX):]
                self._change(sid, lambda s, now, r: st.tick(s, now, r), check_running=True)
            else:
                done = ChildDoneMessage.from_dict(body)
                run, status = done.child_id, done.status
                self._change(sid, lambda s, now, r: st.run_ended(s, run, status, now, r - {run}),
                             check_running=True)
        except (NotFound, ValidationError) as e:  # deleted, or an id no schedule can have: nothing to do
            log.info("message for schedule %r dropped: %s", sid, e)

    def _early(self, body: dict[str, Any]) -> bool:
        """A fire that came before its time (armed early on purpose, adapters/scheduler.py, or a clock
        ahead): sent back to the queue delayed to its second (at most SQS's 15 minutes at a time), and
        nothing else done. Loads nothing: what is due is decided when it comes back."""
        at = body.get("fire_at_ms")
        if not isinstance(at, int) or isinstance(at, bool) or at <= self.now_ms:
            return False
        self.engine.queues.send_decision(body, min(-(-(at - self.now_ms) // 1000), MAX_DELAY_S))
        return True

    # ------------------------------------------------------------ claim, act, advance
    def _change(self, sid: str, fn: Callable[[st.ScheduleState, int, set[str]], Any],
                check_running: bool = False, rearm: bool = False) -> st.ScheduleState:
        """`rearm`: arm the clock even if the next fire did not move (it may have been lost)."""
        for _ in range(MAX_RETRIES):
            s = self._load(sid)
            if s.pending or s.cancels:
                s = self._settle(s)  # a claim whose acting was cut short: finish it first
            armed = s.armed_ms
            running = self._still_running(s) if check_running else set(s.running)
            now = self.now_ms
            new = s.copy()
            fn(new, now, running)
            if rearm or new.armed_ms != armed:
                self._arm(new)
            try:
                new.rev = self.store.put(sid, new.to_dict(), s.rev)  # claim
            except ConflictError:
                continue
            return self._settle(new) if new.pending or new.cancels else new
        raise ConflictError(f"schedule:{sid}", -1, f"schedule {sid!r}: gave up after {MAX_RETRIES} conflicts")

    def _settle(self, s: st.ScheduleState) -> st.ScheduleState:
        c = s.config
        failed: dict[str, str] = {}
        for p in s.pending:
            try:
                self.engine.start(c.workflow, c.version, c.input, p["execution_id"],
                                  parent={"execution_id": st.PARENT_PREFIX + c.schedule_id, "step": "run"})
            except (UnknownWorkflow, ExecutionExists, ValidationError) as e:
                # refused for good: record it rather than fail every redelivery forever
                failed[p["execution_id"]] = f"START_FAILED: {e}"
        for eid in s.cancels:
            try:
                self.engine.cancel(eid, f"schedule {c.schedule_id}: overlap cancel_other")
            except (ExecutionEnded, NotFound):
                pass
        done = s.copy()
        st.settled(done)
        for eid, why in failed.items():
            st.run_ended(done, eid, why, self.now_ms, set(done.running) - {eid})
        try:
            done.rev = self.store.put(c.schedule_id, done.to_dict(), s.rev)  # advance
        except ConflictError:
            return self._load(c.schedule_id)  # someone else advanced (or changed) it: theirs stands
        if done.armed_ms != s.armed_ms:
            self._arm(done)
        return done

    def _still_running(self, s: st.ScheduleState) -> set[str]:
        out = set()
        for eid in s.running:
            try:
                if self.engine.load_state(eid).status not in TERMINAL:
                    out.add(eid)
            except NotFound:
                pass
        return out

    def _arm(self, s: st.ScheduleState) -> None:
        msg = None
        if s.armed_ms is not None:
            sid = s.schedule_id
            fire = ScheduleFire(st.PARENT_PREFIX + sid, f"{FIRE}:{sid}:{s.armed_ms}", sid, s.armed_ms)
            msg = fire.to_dict()
        on_time = self.arm.arm(s.schedule_id, s.armed_ms, msg)
        if on_time is False and msg is not None and s.armed_ms is not None:
            # Too close to arm Scheduler early: an exact copy on SQS lands on the second; Scheduler's
            # own (up to a minute late) then finds nothing due, or was re-armed past it already.
            self.engine.queues.send_decision(msg, max(0, min(-(-(s.armed_ms - self.now_ms) // 1000),
                                                             MAX_DELAY_S)))

    def _load(self, sid: str) -> st.ScheduleState:
        check_schedule_id(sid)
        hit = self.store.get(sid)
        if hit is None:
            raise NotFound(f"schedule {sid!r} not found")
        return self._state(*hit)

    @staticmethod
    def _state(d: dict[str, Any], rev: int) -> st.ScheduleState:
        s = st.ScheduleState.from_dict(d)
        s.rev = rev
        return s

    def _check_workflow(self, workflow: str, version: str | None) -> None:
        try:
            self.engine.registry.get(workflow, version)
        except UnknownWorkflow as e:
            raise ValidationError(str(e), "workflow") from None
        except OrbitError as e:
            raise ValidationError(str(e), "workflow") from None


def _summary(d: Any, now_ms: int) -> dict[str, Any]:
    """One row of the listing: a stored row that cannot be read (written by an older version, by
    hand, or before its spec was checked) is listed with what is wrong, never failing the list."""
    try:
        if isinstance(d, dict) and d.get("unreadable"):
            raise ValueError(d["unreadable"])
        return st.ScheduleState.from_dict(d).summary(now_ms)
    except Exception as e:  # noqa: BLE001 - any stored row: one bad row must not hide the others
        config = d.get("config") if isinstance(d, dict) else None
        config = config if isinstance(config, dict) else {}
        sid, workflow = config.get("id"), config.get("workflow")
        log.warning("schedule %r cannot be read: %s", sid, e)
        return {"id": sid if isinstance(sid, str) else None,
                "workflow": workflow if isinstance(workflow, str) else None,
                "paused": bool(d.get("paused")) if isinstance(d, dict) else False, "spec": None,
                "next_occurrence": None, "running": 0,
                "problem": f"this stored schedule cannot be read ({type(e).__name__}: {e}); "
                           "update or delete it"}


def _note(note: Any) -> str:
    if not isinstance(note, str) or len(note) > 1000:
        raise ValidationError("must be a string of at most 1000 characters", "note")
    return note
