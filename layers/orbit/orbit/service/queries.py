"""Queries: read a running or ended execution through a question its workflow declares.

A query writes nothing (no commit, no message) and reads the execution's
state once (one load). A definition declares `queries: {NAME: "{% expr %}"}`,
evaluated over the root its step inputs see plus `query` (the caller's input),
with `$now()` the time of the last recorded decision. A code workflow
registers `ctx.query_handler(NAME, fn)`: the function is replayed against the
state in a fresh instance (nothing it asks for is recorded) and `fn(input)` runs
once replay stops, reading the function's locals as they stand; a durable
call from inside a handler is an error naming the call.
"""

from __future__ import annotations

import json
from typing import Any

from orbit.core.definition.model import Definition
from orbit.core.history.storable import value_problem
from orbit.core.runtime.code.updates import ctx_call as _ctx_call
from orbit.errors import OrbitError, ValidationError


class QueryError(ValidationError):
    """The query is unknown, or its handler or expression failed; nothing was recorded."""


class AnswerNotStorable(QueryError):
    """The answer is not JSON data (a datetime, a set, a lone surrogate...): HTTP 400 with code
    VALUE_NOT_STORABLE, the message naming the path inside the answer and what is there."""

    code = "VALUE_NOT_STORABLE"


def _answer(name: str, answer: Any) -> Any:
    problem = value_problem(answer, "answer")
    if problem is not None:
        raise AnswerNotStorable(f"query {name!r} answered with a value that is not JSON data: {problem}",
                                f"queries.{name}")
    return json.loads(json.dumps(answer))  # the caller's own copy, never the workflow's locals


def run_query(engine: Any, execution_id: str, name: str, input: Any = None) -> Any:
    from orbit.service.operations import check_json

    check_json(input, "input")
    from orbit.core.history.hook_tokens import key_of

    state = engine.load_state(execution_id)
    wf = engine.registry.get_build(state.workflow, state.version, state.build)
    keys = lambda: key_of(engine.ids)  # noqa: E731 - hooks.NAME.token reads as in a decision
    if isinstance(wf, Definition):
        return _answer(name, _definition_query(wf, state, name, input, keys))
    return _answer(name, _code_query(wf, state, name, input, keys))


def _unknown(state: Any, name: str, known: Any) -> QueryError:
    names = ", ".join(sorted(known)) or "none"
    return QueryError(f"workflow {state.workflow!r} v{state.version} has no query {name!r}; "
                      f"it declares: {names}", "name")


def _definition_query(wf: Definition, state: Any, name: str, input: Any, keys: Any) -> Any:
    from orbit.core.definition.expressions import evaluate
    from orbit.core.runtime.dsl.interpreter import _Run

    queries = wf.raw.get("queries") or {}
    if name not in queries:
        raise _unknown(state, name, queries)
    now = state.updated_at_ms or state.created_at_ms
    root = _Run(wf, state, now, keys=keys).root(query=input)
    try:
        return evaluate(queries[name], root, now)
    except OrbitError as e:
        raise QueryError(f"query {name!r} failed: {e}", f"queries.{name}") from None


class _NoDurableCalls:
    """Stands in for the replay while a handler runs: any durable call is refused, by name."""

    def __init__(self, execution_id: str, query: str) -> None:
        self.execution_id = execution_id
        self._query = query

    def __getattr__(self, attr: str) -> Any:
        raise QueryError(f"query handler {self._query!r} called ctx.{_ctx_call(attr)}(): a query may not "
                         "call a durable operation (it records nothing)", "name")


def _code_query(wf: Any, state: Any, name: str, input: Any, keys: Any) -> Any:
    from orbit.service.user_code import run_user_code

    # the replay and the handler are the workflow author's code: bounded, where the server bounds it
    return run_user_code(lambda: _run_code_query(wf, state, name, input, keys),
                         f"query {name!r} of execution {state.id!r}")


def _run_code_query(wf: Any, state: Any, name: str, input: Any, keys: Any) -> Any:
    from orbit.core.runtime.code.instance import Instance

    inst = Instance(wf, state.id)
    inst.replay.updates.dry = True  # updates not run yet stay unrun: a query records nothing
    try:
        inst.feed(state, keys)  # replays to where the execution stands; its commands are dropped
        ctx = inst.ctx
        handlers = ctx.__dict__.get("query_handlers") or {}
        if name not in handlers:
            raise _unknown(state, name, handlers)
        replay, ctx._replay = ctx._replay, _NoDurableCalls(state.id, name)  # type: ignore[assignment]
        try:
            return handlers[name](input)  # checked and copied by _answer
        except QueryError:
            raise
        except Exception as e:  # noqa: BLE001 - the handler is user code
            raise QueryError(f"query {name!r} failed: {type(e).__name__}: {e}", "name") from None
        finally:
            ctx._replay = replay
    finally:
        inst.discard()
