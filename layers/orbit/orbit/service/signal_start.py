"""Signal-with-start: signal the execution of an id, starting it first when it does not exist.

Atomic by construction (docs/triggers.md, "Signal-with-start"):

- the execution does not exist: ONE commit creates it and records the signal (its start and the
  signal message decided together, both ids remembered as the commit's inbound). The commit is
  conditional on seq 1, so of two racing callers one creates; the other's write is refused and it
  goes on as a signal to the execution that now exists;
- it exists: the signal is decided here, now (not queued), in a commit conditional on the next seq,
  so the signals of a burst are recorded in the order their calls were accepted.

A signal id makes a retry idempotent: the same id again is received once; a retry after a crash
between the commit and its effects re-sends the effects still due (the commit log is the outbox).
"""

from __future__ import annotations

from typing import Any

from orbit.core.definition.model import Definition
from orbit.core.history.messages import SignalMessage, StartMessage
from orbit.core.history.state import TERMINAL_WORKFLOW, ExecutionState
from orbit.core.history.storable import execution_id_problem, signal_id_problem
from orbit.errors import (
    ConflictError,
    ExecutionEnded,
    ExecutionExists,
    NotFound,
    PayloadRefused,
    ValidationError,
)
from orbit.service.catalog import signal_schema
from orbit.service.operations import check_json
from orbit.service.turn import Turn

MAX_ATTEMPTS = 64  # create-or-signal rounds before giving up (each signal round retries conflicts itself)


def signal_with_start(engine: Any, execution_id: str, workflow: str, signal: str, payload: Any = None,
                      input: Any = None, version: str | None = None,
                      signal_id: str | None = None) -> dict[str, Any]:
    """Signal `execution_id` (a run of `workflow`), creating it with `input` first if it does not exist.

    Returns {"id", "signal_id", "started"}: `started` is True when this call created the execution.
    ValidationError / PayloadRefused before anything is recorded; ExecutionEnded when it has ended;
    ExecutionExists when the id belongs to another workflow."""
    problem = execution_id_problem(execution_id) if isinstance(execution_id, str) else "must be a string"
    if problem:
        raise ValidationError(problem, "id")
    if not isinstance(signal, str) or not signal:
        raise ValidationError("is required (the signal's name)", "signal")
    if signal_id is not None and (problem := signal_id_problem(signal_id)):
        raise ValidationError(problem, "signal_id")
    check_json(payload, "payload")
    check_json(input, "input")
    sid = signal_id or engine.ids.token()
    mid = f"signal:{sid}"
    for _ in range(MAX_ATTEMPTS):
        state = _existing(engine, execution_id)
        if state is None or not state.created:
            wf = engine.registry.get(workflow, version)
            _check_signal(wf, signal, payload)
            pinned = None if version is None else str(wf.version)
            start = StartMessage(execution_id, f"start:{execution_id}", wf.name, pinned, input)
            first = [start, SignalMessage(execution_id, mid, signal, payload)]
            flow = engine.flow_control  # its start limit: a slot now, or LimitFull (nothing recorded)
            held = flow.hold_for_signal_start(wf, execution_id, input) if flow is not None else None
            try:  # one commit, conditional on the first seq: a racing creator wins, this call then signals it
                engine._decide_and_commit(execution_id, first, {}, Turn(), state is None)
            except ConflictError:
                engine._cache.pop(execution_id, None)
                continue  # the racing creator is the same holder (x:<id>): the slot is its
            except BaseException:
                engine._cache.pop(execution_id, None)
                if held is not None and _existing(engine, execution_id) is None:
                    flow.give_back(held)  # nothing was created: the slot goes back
                raise
            return {"id": execution_id, "signal_id": sid, "started": True}
        if state.workflow != workflow:
            raise ExecutionExists(execution_id, f"execution {execution_id!r} is a run of {state.workflow!r}, "
                                                f"not {workflow!r}; signal-with-start was refused")
        seen = engine._signal_seen(state, signal, payload, sid)  # IdReused: same id, other signal
        if not seen:
            if state.status in TERMINAL_WORKFLOW:
                raise ExecutionEnded(execution_id, state.status, f"signal {signal!r} was not sent")
            engine._check_payload(state, signal, payload)
        try:  # a repeat (seen) goes through too: its commit's effects still due are re-sent
            engine._traced(execution_id, [SignalMessage(execution_id, mid, signal, payload)], {},
                           engine.tracer.current_header())
        except ConflictError:
            continue  # a burst outran the engine's own retries: load again and go on
        return {"id": execution_id, "signal_id": sid, "started": False}
    raise ConflictError(execution_id, -1, f"execution {execution_id!r}: signal-with-start gave up after "
                                          f"{MAX_ATTEMPTS} rounds of conflicting writes")


def _existing(engine: Any, execution_id: str) -> ExecutionState | None:
    engine._cache.pop(execution_id, None)  # decided on the stored state: a stale cache would mislead
    try:
        return engine.load_state(execution_id)
    except NotFound:
        return None


def _check_signal(wf: Any, name: str, payload: Any) -> None:
    """The signal checks `signal()` makes, against the workflow the start would run."""
    if isinstance(wf, Definition):
        known = set(wf.signal_names())
        if name not in known:
            raise ValidationError(f"workflow {wf.name!r} v{wf.version} has no signal {name!r}; "
                                  f"it knows: {', '.join(sorted(known)) or 'none'}", "signal")
    schema = signal_schema((getattr(wf, "signals", None) or {}).get(name))
    if schema is None:
        return
    from orbit.core.definition.contracts import check_schema

    err = check_schema(schema, payload, "PAYLOAD_REFUSED", label="payload",
                       schema_path=f"signals.{name}.schema")
    if err is not None:
        raise PayloadRefused(name, err.message, err.details)
