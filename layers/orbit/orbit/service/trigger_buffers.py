"""Debounce and batching of trigger events (docs/triggers.md, "Debounce and batching").

A trigger with `debounce: {key, period, max_wait?}` or `batch: {key?, max_size, max_wait}` does
not start an execution per event: each event is added to its key's buffer (one item, written
only conditionally on its revision), and a check (a delayed message on the trigger queue) flushes
the buffer when it is due:

- debounce: due `period` after the last event, at most `max_wait` after the first; the execution
  gets the last event's input and its `id` expression's value;
- batch: due `max_wait` after the first event, or at once when `max_size` events are in; the
  execution gets the list of the events' inputs, in the order they were added, and the first
  event's id.

The execution id is `{id}-{n}`, n the buffer's generation (1, 2, ...), so each flush has its own
deterministic id. A flush is two writes: the buffer moves to the next generation and keeps the
flushed batch as `closing` (one conditional write: an event added meanwhile makes it retry), then
the start (idempotent: same id, same input), then `closing` is cleared. A crash between them
leaves `closing`, which the next check or event finishes first. So no event is lost, and none is
counted twice: each buffer remembers the keys of its last MAX_SEEN events (across generations) and
the executions of its last MAX_FLUSHED flushes, so a redelivered event (or check) is recognised and
does again what its first delivery may have died before finishing: it re-arms the check of an
open generation, or repeats the start of the flush it was part of (same id and input: the effects
that start's commit still owes are re-sent, as for any redelivered start).
"""

from __future__ import annotations

import json
from typing import Any

from orbit.core.history.queue_bodies import BufferCheck, TriggerDeadLetter
from orbit.core.history.storable import execution_id_problem
from orbit.errors import ConflictError, ExecutionExists

MAX_SEEN = 500
MAX_ROUNDS = 32
MAX_DELAY_MS = 900_000  # SQS's longest delay: a later check is reached in hops
MAX_BUFFER_CHARS = 300_000  # a DynamoDB item holds 400 KB: a batch that would pass this flushes first


def buffer_id(workflow: str, trigger: str, key: str) -> str:
    return json.dumps([workflow, trigger, key], separators=(",", ":"))


MAX_FLUSHED = 50


def _fresh() -> dict[str, Any]:
    # seen: [[event key, generation]]; flushed: [[generation, execution id, workflow]], newest last
    return {
        "gen": 1,
        "first_ms": None,
        "due_ms": None,
        "armed_ms": None,
        "events": [],
        "last": None,
        "id": None,
        "seen": [],
        "flushed": [],
        "closing": None,
    }


class Refused(Exception):
    """An event a buffer cannot take (the caller dead-letters it with this reason)."""


def add(engine: Any, workflow: str, trig: Any, key: str, base_id: str, input: Any, event_key: str) -> str:
    """Add one event to its buffer; returns "buffered" or "duplicate"."""
    buffers, checks = _ports(engine)
    bid = buffer_id(workflow, trig.name, key)
    problem = execution_id_problem(f"{base_id}-{10**6}")
    if problem:
        raise Refused(f"the id expression gave an id that does not fit once numbered: {problem}")
    for _ in range(MAX_ROUNDS):
        now = engine.clock.now_ms()
        got = buffers.get(bid)
        state, rev = got if got is not None else (_fresh(), None)
        if state.get("closing"):
            _finish(engine, bid, state, rev)
            continue
        check = BufferCheck(workflow, trig.name, key, state["gen"])
        gen = next((g for k, g in state["seen"] if k == event_key), None)
        if gen is not None:  # a redelivery: its first delivery may have died before what followed
            if gen == state["gen"] and state["first_ms"] is not None:  # ... its check
                checks.send(check.due(state["armed_ms"]).to_dict(), max(0, state["armed_ms"] - now))
            else:  # ... or the sends of the start its flush made
                _restart(engine, state, gen)
            return "duplicate"
        if trig.batch is not None and len(state["events"]) >= trig.batch["max_size"]:
            # full, its flush not done yet (the check after the write that filled it failed): that
            # batch goes first, so no batch passes max_size (a delivery-chaos finding)
            _flush(engine, bid, state, rev)
            continue
        new = dict(state)
        if new["first_ms"] is None:
            new.update(first_ms=now, events=[], last=None, id=base_id)
        debounce, batch = trig.debounce, trig.batch
        if debounce is not None:
            new["last"] = {"input": input, "id": base_id}
            due = now + debounce["period_ms"]
            if debounce.get("max_wait_ms") is not None:
                due = min(due, new["first_ms"] + debounce["max_wait_ms"])
        else:
            new["events"] = [*new["events"], input]
            due = new["first_ms"] + batch["max_wait_ms"]
            if len(new["events"]) >= batch["max_size"]:
                due = now
        new["seen"] = [*state["seen"], [event_key, state["gen"]]][-MAX_SEEN:]
        new["due_ms"] = new["armed_ms"] = due
        if len(json.dumps(new)) > MAX_BUFFER_CHARS:
            if batch is not None and state["first_ms"] is not None:  # flush what is there, then add
                _flush(engine, bid, state, rev)
                continue
            raise Refused(f"the event is too large to buffer ({MAX_BUFFER_CHARS} characters at most)")
        try:
            buffers.put(bid, new, rev)
        except ConflictError:
            continue
        if due <= now:
            check_due(engine, check.due(due).to_dict())
        else:
            checks.send(check.due(due).to_dict(), min(due - now, MAX_DELAY_MS))
        return "buffered"
    raise ConflictError(bid, -1, f"trigger buffer {bid}: gave up after {MAX_ROUNDS} conflicting writes")


def check_due(engine: Any, body: dict[str, Any]) -> str:
    """A check came: flush the buffer if it is due, send the check on if it is not (and no later
    check is armed), nothing if that generation was flushed already. Returns what it did."""
    buffers, checks = _ports(engine)
    check = BufferCheck.from_dict(body)
    bid = buffer_id(check.workflow, check.trigger, check.key)
    for _ in range(MAX_ROUNDS):
        now = engine.clock.now_ms()
        got = buffers.get(bid)
        if got is None:
            return "gone"
        state, rev = got
        if state.get("closing"):
            _finish(engine, bid, state, rev)
            continue
        if state["gen"] != check.gen or state["first_ms"] is None:
            _restart(engine, state, check.gen)  # a redelivered check: its start's sends again
            return "flushed before"
        if state["due_ms"] > now:
            if state["armed_ms"] > check.at:
                return "a later check is armed"
            at = min(state["due_ms"], now + MAX_DELAY_MS)
            try:
                buffers.put(bid, {**state, "armed_ms": at}, rev)
            except ConflictError:
                continue
            checks.send(check.due(at).to_dict(), at - now)
            return "sent on"
        if _flush(engine, bid, state, rev):
            return "flushed"
    raise ConflictError(bid, -1, f"trigger buffer {bid}: gave up after {MAX_ROUNDS} conflicting writes")


def _flush(engine: Any, bid: str, state: dict[str, Any], rev: int | None) -> bool:
    """Move to the next generation holding the batch as `closing`, then start it (False: a
    conflicting write came first; the caller reads again)."""
    workflow = json.loads(bid)[0]
    if state["last"] is not None:  # debounce
        input, base = state["last"]["input"], state["last"]["id"]
    else:
        input, base = list(state["events"]), state["id"]
    closing = {"workflow": workflow, "execution_id": f"{base}-{state['gen']}", "input": input}
    flushed = [*state.get("flushed", []), [state["gen"], closing["execution_id"], workflow]][-MAX_FLUSHED:]
    nxt = {**_fresh(), "gen": state["gen"] + 1, "seen": state["seen"], "flushed": flushed, "closing": closing}
    try:
        rev = engine.trigger_buffers.put(bid, nxt, rev)
    except ConflictError:
        return False
    _finish(engine, bid, nxt, rev)
    return True


def _finish(engine: Any, bid: str, state: dict[str, Any], rev: int | None) -> None:
    """Start the flushed batch (idempotent: its id and input are fixed), then clear `closing`."""
    from orbit.errors import UnknownWorkflow, ValidationError, WorkflowRetired

    closing = state["closing"]
    try:
        engine.start(closing["workflow"], None, closing["input"], closing["execution_id"])
    except ExecutionExists:
        pass  # started before with this id (and another input: only by hand); never twice
    except (WorkflowRetired, UnknownWorkflow, ValidationError) as e:  # it can never start: kept, not lost
        dead = getattr(engine, "trigger_dead_letters", None)
        if dead is not None:
            why = f"the flushed batch cannot start: {e}"[:1000]
            letter = TriggerDeadLetter(closing["workflow"], json.loads(bid)[1], why, closing["input"])
            dead.send(letter.to_dict())
    try:
        engine.trigger_buffers.put(bid, {**state, "closing": None}, rev)
    except ConflictError:
        pass  # another caller finished it (or added after finishing): it reads again


def _restart(engine: Any, state: dict[str, Any], gen: int) -> None:
    """The start of generation `gen`'s flush again, as a redelivered start message would be: the
    same id and input, so nothing new starts and the effects its commit still owes are re-sent
    (the sends of the invocation that started it may have died with it)."""
    from orbit.errors import NotFound

    found = next((f for f in state.get("flushed", []) if f[0] == gen), None)
    if found is None:
        return
    _, eid, workflow = found
    try:
        existing = engine.load_state(eid)
    except NotFound:
        return  # not started yet: `closing` starts it
    try:
        engine.start(workflow, None, existing.input, eid)
    except ExecutionExists:
        pass


def _ports(engine: Any) -> tuple[Any, Any]:
    buffers, checks = getattr(engine, "trigger_buffers", None), getattr(engine, "trigger_checks", None)
    if buffers is None or checks is None:
        raise Refused("this deployment has no trigger buffers (debounce and batch need the trigger queue)")
    return buffers, checks
