"""Updates: validate, record once, wait for the result (docs/updates.md).

`submit` checks the update against the execution as it stands, on a side replay that records
nothing (as a query does): an unknown name is refused with the declared ones listed, the
validator's refusal is returned word for word, an ended execution is refused. Only then does it
send one `update` message (id `update:<update_id>`, so a resent message is recorded once); the
decider records `UpdateAccepted`, and the handler's outcome as `UpdateCompleted`
(orbit/core/decider/updates.py). An update id already recorded returns its recorded result:
nothing is validated or sent again. `wait` reads the state until the outcome is recorded, the
execution ends, or the timeout passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from orbit.core.definition.model import Definition
from orbit.core.history.messages import UpdateMessage
from orbit.core.history.storable import signal_id_problem
from orbit.errors import ExecutionEnded, IdReused, OrbitError, UpdateRefused, ValidationError

MAX_WAIT_S = 25.0  # an API Gateway request ends after 29 s
MAX_UPDATES = 2_000  # per run: each stays in its state (the id answers its result); see docs/limits.md
POLL_S = 0.2


def _unknown(state: Any, name: str, known: Any) -> UpdateRefused:
    names = ", ".join(sorted(known)) or "none"
    return UpdateRefused(f"workflow {state.workflow!r} v{state.version} has no update {name!r}; "
                         f"it declares: {names}", "name")


def submit(engine: Any, execution_id: str, name: str, input: Any = None, update_id: str | None = None) -> str:
    """Validate and send one update; returns its id (the recorded one when `update_id` is known)."""
    from orbit.service.operations import check_json

    if update_id is not None and (problem := signal_id_problem(update_id)):
        raise ValidationError(problem, "update_id")
    if not isinstance(name, str) or not name:
        raise ValidationError("is required (an update the workflow declares)", "name")
    check_json(input, "input")
    state = engine.load_state(execution_id)
    if update_id is not None and update_id in state.updates:
        recorded = state.updates[update_id]
        if recorded.get("name") != name or recorded.get("input") != input:
            raise IdReused("update", update_id, str(recorded.get("name")), name)
        return update_id  # the same id again: its one result, nothing new
    if state.terminal:
        raise ExecutionEnded(state.id, state.status, f"update {name!r} was not sent")
    wf = engine.registry.get_build(state.workflow, state.version, state.build)
    if len(state.updates) >= MAX_UPDATES:
        raise UpdateRefused(f"execution {state.id!r} has had {len(state.updates)} updates, the most one run "
                            f"keeps; continue as new to take more", "name")
    if isinstance(wf, Definition):
        _check_definition(wf, state, name, input)
        engine._check_payload(state, wf.raw["updates"][name]["signal"], input)  # the signal's schema
    else:
        _check_code(wf, state, name, input)
    if update_id is not None:  # sent but not recorded yet: the claim knows it (409 if it differs)
        from orbit.service.request_claims import claim

        claim(engine, state, "update", update_id, name, input)
    uid = update_id or engine.ids.token()
    engine.queues.send_decision(UpdateMessage(execution_id, f"update:{uid}", uid, name, input).to_dict())
    return uid


def _check_definition(wf: Definition, state: Any, name: str, input: Any) -> None:
    from orbit.core.definition.expressions import evaluate
    from orbit.core.runtime.dsl.interpreter import _Run

    declared = wf.raw.get("updates") or {}
    if name not in declared:
        raise _unknown(state, name, declared)
    validator = declared[name].get("validator")
    if validator is None:
        return
    now = state.updated_at_ms or state.created_at_ms
    try:
        ok = evaluate(validator, _Run(wf, state, now).root(update=input), now)
    except OrbitError as e:
        raise UpdateRefused(f"update {name!r}: its validator failed: {e}") from None
    if ok is True:
        return
    raise UpdateRefused(ok if isinstance(ok, str) and ok else f"update {name!r} was refused by its validator")


def _check_code(wf: Any, state: Any, name: str, input: Any) -> None:
    from orbit.service.user_code import run_user_code

    # the replay and the validator are the workflow author's code: bounded, where the server bounds it
    run_user_code(lambda: _run_check_code(wf, state, name, input),
                  f"the validator of update {name!r} of execution {state.id!r}")


def _run_check_code(wf: Any, state: Any, name: str, input: Any) -> None:
    from orbit.core.runtime.code.instance import Instance
    from orbit.core.runtime.code.updates import Refused, validate

    inst = Instance(wf, state.id)
    inst.replay.updates.dry = True  # a side replay: nothing it asks for is recorded
    try:
        inst.feed(state)
        updates = inst.replay.updates
        if name not in updates.handlers:
            raise _unknown(state, name, updates.handlers)
        try:
            validate(updates.ctx, updates.handlers[name][1], name, input)
        except Refused as e:
            raise UpdateRefused(str(e)) from None
    finally:
        inst.discard()


def outcome(engine: Any, execution_id: str, update_id: str) -> dict[str, Any] | None:
    """The recorded outcome `{update_id, status, result, error}`, or None while it has none.
    ExecutionEnded when the execution ended before the update ran."""
    state = engine.load_state(execution_id)
    rec = state.updates.get(update_id)
    if rec is not None and rec.get("status") == "COMPLETED":
        return {"update_id": update_id, "status": "COMPLETED", "name": rec.get("name"),
                "result": rec.get("result"), "error": rec.get("error")}
    if state.terminal:
        later = f" (it continued as new as {state.continued_as!r})" if state.continued_as else ""
        raise ExecutionEnded(state.id, state.status, f"update {update_id!r} never ran{later}")
    return None


def wait(engine: Any, execution_id: str, update_id: str, timeout_s: float,
         pump: Callable[[], None] | None = None,
         sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Read until the outcome is recorded; after `timeout_s`, `{update_id, status: ACCEPTED}`."""
    deadline = time.monotonic() + max(0.0, min(timeout_s, MAX_WAIT_S))
    while True:
        if pump is not None:
            pump()
        found = outcome(engine, execution_id, update_id)
        if found is not None:
            return found
        left = deadline - time.monotonic()
        if left <= 0:
            return {"update_id": update_id, "status": "ACCEPTED", "result": None, "error": None}
        sleep(min(POLL_S, left))


def run_update(engine: Any, execution_id: str, name: str, input: Any = None, update_id: str | None = None,
               timeout_s: float = 10.0, pump: Callable[[], None] | None = None) -> dict[str, Any]:
    """Submit and wait: the API's `POST /executions/{id}/updates/{name}`."""
    uid = submit(engine, execution_id, name, input, update_id)
    return wait(engine, execution_id, uid, timeout_s, pump)


def http_update(engine: Any, body: dict[str, Any], query: Any, eid: str, name: str) -> tuple[int, Any]:
    """`POST /executions/{id}/updates/{name}` with `{"input", "update_id"?, "timeout"?}` (seconds,
    at most 25): 200 with the outcome, or 202 `{update_id, status: ACCEPTED}` when the timeout
    passed first (ask again with the same update_id)."""
    timeout = body.get("timeout", 10)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 <= timeout <= MAX_WAIT_S:
        raise ValidationError(f"must be a number of seconds from 0 to {MAX_WAIT_S:g}", "body.timeout")
    update_id = body.get("update_id")
    if update_id is not None and (problem := signal_id_problem(update_id)):
        raise ValidationError(problem, "body.update_id")
    answer = run_update(engine, eid, name, body.get("input"), update_id, float(timeout))
    return (200 if answer["status"] == "COMPLETED" else 202), answer


ROUTE = ("POST", r"/executions/([^/]+)/updates/([^/]+)", http_update)
