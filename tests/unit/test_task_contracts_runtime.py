"""`tasks:` contracts checked when an execution runs: the decider refuses a step whose input breaks
`tasks.NAME.input` before dispatching it, and fails a step whose result breaks `tasks.NAME.output`.
The pure decision first, then scenarios on the simulator (worker and inline steps, fan-out,
on_failure, compensation, retries), replay of a history recorded before contracts were checked."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.adapters.memory import SeededIds
from orbit.core.decider.decide import decide
from orbit.core.definition import parse_definition, validate_definition
from orbit.core.definition.task_contracts import TaskContracts
from orbit.core.history.effects import DispatchTask
from orbit.core.history.events import Recorded, StepSucceeded
from orbit.core.history.messages import ResultMessage, StartMessage
from orbit.core.history.model import apply
from orbit.core.history.state import ExecutionState
from orbit.testing.simulator import fail, succeed

from tests.unit.dsl_harness import T0, definition, events, sim_with, unit_types

CHARGE = {"input": {"type": "object", "required": ["amount"], "properties": {"amount": {"type": "number"}}},
          "output": {"type": "object", "required": ["charge_id"],
                     "properties": {"charge_id": {"type": "string"}}}}
TASKS = {"pay.charge": CHARGE}


def saga(**charge: Any) -> dict[str, Any]:
    return {
        "reserve": {"task": "inv.reserve", "input": {}, "compensate": {"task": "inv.release", "input": {}}},
        "charge": {"after": ["reserve"], "task": "pay.charge", "input": {"amount": "{% input.amount %}"},
                   **charge},
    }


# -- the pure decision -----------------------------------------------------------------------------

def _decided(doc: dict[str, Any], state: ExecutionState, msg: Any, now: int = T0) -> Any:
    return decide(parse_definition(doc), state, msg, now, SeededIds("x"))


def test_an_input_that_breaks_the_contract_is_recorded_as_the_steps_failure_and_never_dispatched() -> None:
    doc = definition({"charge": {"task": "pay.charge", "input": {"amount": "{% input.amount %}"}}},
                     tasks=TASKS)
    state = ExecutionState(id="e1")
    d = _decided(doc, state, StartMessage("e1", "start:e1", workflow="wf", input={"amount": "ten"}))
    types = [(r.event.TYPE, getattr(r.event, "step", None)) for r in d.events]
    assert ("StepScheduled", "charge") not in types and ("StepFailed", "charge") in types
    assert not [e for e in d.effects if isinstance(e, DispatchTask)]  # nothing reaches a worker
    err = state.units["charge"].error
    assert err is not None and (err.code, err.retryable) == ("INPUT_CONTRACT_VIOLATION", False)
    assert err.message == ("task 'pay.charge' at step 'charge': input.amount: \"ten\" is not of type "
                           "'number' (contract tasks.pay.charge.input; not dispatched)")
    assert err.details["task"] == "pay.charge" and err.details["step"] == "charge"
    assert err.details["errors"][0]["path"] == "input.amount"
    assert state.status == "FAILED"


def test_a_result_that_breaks_the_contract_fails_the_step_instead_of_completing_it() -> None:
    doc = definition({"charge": {"task": "pay.charge", "input": {"amount": 5}}}, tasks=TASKS)
    state = ExecutionState(id="e1")
    d = _decided(doc, state, StartMessage("e1", "start:e1", workflow="wf", input={}))
    sent = [e for e in d.effects if isinstance(e, DispatchTask)]
    assert [s.unit for s in sent] == ["charge"]  # a valid input is dispatched as before
    d = _decided(doc, state, ResultMessage("e1", "r1", unit="charge", token=sent[0].token,
                                           output={"charge_id": 42}), T0 + 5)
    assert [r.event.TYPE for r in d.events][:2] == ["StepAttemptFailed", "StepFailed"]
    err = state.units["charge"].error
    assert err is not None and err.code == "OUTPUT_CONTRACT_VIOLATION"
    assert err.message == ("task 'pay.charge' at step 'charge': output.charge_id: 42 is not of type "
                           "'string' (contract tasks.pay.charge.output)")
    assert state.units["charge"].output is None


def test_a_recorded_success_stays_a_success_on_replay_and_the_execution_goes_on() -> None:
    """A history recorded before contracts were checked (or under an older schema) holds a
    StepSucceeded whose output breaks today's contract: folding it keeps the step succeeded, and
    the next decision builds on it rather than checking it again."""
    doc = definition({"charge": {"task": "pay.charge", "input": {"amount": 5}},
                      "after": {"compute": "{% steps.charge.output.charge_id %}"}},
                     tasks=TASKS)
    state = ExecutionState(id="e1")
    d = _decided(doc, state, StartMessage("e1", "start:e1", workflow="wf", input={}))
    token = next(e for e in d.effects if isinstance(e, DispatchTask)).token
    replayed = ExecutionState(id="e1")
    for r in d.events:
        apply(replayed, r)
    apply(replayed, Recorded(replayed.last_seq + 1, T0 + 1, StepSucceeded("charge", 1, {"charge_id": 42})))
    assert replayed.units["charge"].status == "SUCCEEDED"
    _decided(doc, replayed, ResultMessage("e1", "late", unit="charge", token=token, output={}), T0 + 2)
    assert replayed.status == "COMPLETED" and replayed.units["charge"].output == {"charge_id": 42}


def test_a_definition_without_contracts_pays_nothing() -> None:
    plain = parse_definition(definition({"a": {"task": "t.a"}}))
    assert plain.task_contracts is None
    only_text = parse_definition(definition({"a": {"task": "t.a"}}, tasks={"t.a": {"description": "x"}}))
    assert only_text.task_contracts is None  # a contract with no schema checks nothing
    d = parse_definition(definition({"a": {"task": "t.a"}}, tasks={"t.a": {"output": {"type": "string"}}}))
    assert d.task_contracts is d.task_contracts  # compiled once per definition
    assert d.task_contracts.declares("t.a", "output") and not d.task_contracts.declares("t.a", "input")


def test_validators_are_compiled_once_per_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    from orbit.core.definition import contracts

    compiled: list[Any] = []
    real = contracts.compile_schema
    def counted(schema: Any, **options: Any) -> Any:
        compiled.append(schema)
        return real(schema, **options)

    monkeypatch.setattr(contracts, "compile_schema", counted)
    c = TaskContracts.of({"t": {"input": {"type": "object"}, "output": {"type": "string"}}})
    assert c is not None
    for i in range(50):
        assert c.check("t", f"u{i}", "output", "ok") is None
        assert c.check("t", f"u{i}", "input", {}) is None
    assert len(compiled) == 2


def test_a_message_is_one_line_however_the_value_looks() -> None:
    c = TaskContracts.of({"t": {"output": {"type": "object", "properties": {"s": {"enum": ["a"]}}}}})
    assert c is not None
    err = c.check("t", "u", "output", {"s": "line one\nline two" * 100})
    assert err is not None and "\n" not in err.message and len(err.message) <= 500
    assert err.message.startswith("task 't' at step 'u': output.s: ")


def test_a_schema_with_a_remote_reference_is_refused_with_its_path() -> None:
    doc = definition({"a": {"task": "t.a"}},
                     tasks={"t.a": {"output": {"$ref": "https://example.com/schema.json"}}})
    found = [str(p) for p in validate_definition(doc)]
    assert len(found) == 1 and found[0].startswith("tasks.t.a.output: invalid JSON Schema: $ref: ")
    assert "points outside this schema" in found[0]


def test_an_unresolvable_reference_that_slipped_past_validation_fails_the_step_not_the_decider() -> None:
    c = TaskContracts.of({"t": {"output": {"$ref": "#/$defs/missing"}}})
    assert c is not None
    err = c.check("t", "u", "output", {})
    assert err is not None and err.code == "OUTPUT_CONTRACT_VIOLATION" and not err.retryable
    assert err.details["contract"] == "tasks.t.output" and err.details["step"] == "u"
    c = TaskContracts.of({"t": {"input": {"unevaluatedProperties": False, "patternProperties": {"a": {}}}}})
    assert c is not None
    err = c.check("t", "u", "input", {})
    assert err is not None
    assert err.message.startswith("task 't' at step 'u': tasks.t.input cannot be applied: ")
    assert err.details["task"] == "t" and err.details["errors"] == []


# -- scenarios -------------------------------------------------------------------------------------

def test_a_worker_output_breaking_the_contract_fails_the_step_and_compensation_runs() -> None:
    sim = sim_with(saga(retry={"max_attempts": 3}), tasks=TASKS)
    sim.worker("inv.reserve", succeed({}))
    sim.worker("pay.charge", succeed({"charge_id": 7}))
    sim.worker("inv.release", succeed({}))
    eid = sim.start("wf", {"amount": 10}, id="e1")
    sim.run()
    # not retried although the policy allows 3 attempts: the same task would break it again
    assert unit_types(sim, eid, "charge") == ["StepScheduled", "StepDispatched", "StepAttemptFailed",
                                              "StepFailed"]
    d = sim.describe(eid)
    assert d["status"] == "FAILED" and d["error"]["code"] == "OUTPUT_CONTRACT_VIOLATION"
    assert d["steps"]["compensate:reserve"]["status"] == "SUCCEEDED"
    assert [e["type"] for e in events(sim, eid, "CompensationStarted", "CompensationCompleted")] == [
        "CompensationStarted", "CompensationCompleted"]


def test_an_input_breaking_the_contract_never_reaches_the_worker_and_compensation_runs() -> None:
    sim = sim_with(saga(), tasks=TASKS)
    sim.worker("inv.reserve", succeed({}))
    sim.worker("pay.charge", succeed({"charge_id": "c1"}))
    sim.worker("inv.release", succeed({}))
    eid = sim.start("wf", {"amount": "ten"}, id="e1")
    sim.run()
    assert sim.scripts["pay.charge"].seen == []
    assert unit_types(sim, eid, "charge") == ["StepFailed"]
    assert sim.describe(eid)["steps"]["compensate:reserve"]["status"] == "SUCCEEDED"


def test_on_failure_continue_lets_later_steps_read_the_contract_error() -> None:
    sim = sim_with({
        "charge": {"task": "pay.charge", "input": {"amount": 1}, "on_failure": "continue"},
        "report": {"compute": "{% steps.charge.error.code & ' ' & steps.charge.error.details.step %}"},
    }, tasks=TASKS)
    sim.worker("pay.charge", succeed({}))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED" and d["steps"]["report"]["output"] == "OUTPUT_CONTRACT_VIOLATION charge"


def test_a_for_element_breaking_the_contract_fails_alone_and_names_its_unit() -> None:
    sim = sim_with({"charge": {"for": "{% input.amounts %}", "tolerated_failures": 1, "task": "pay.charge",
                               "input": {"amount": "{% item %}"}}}, tasks=TASKS)
    sim.worker("pay.charge", succeed({"charge_id": "c"}))
    eid = sim.start("wf", {"amounts": [1, "two", 3]}, id="e1")
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED"
    assert d["output"] == {"charge": [{"charge_id": "c"}, None, {"charge_id": "c"}]}
    assert d["steps"]["charge[1]"]["error"]["message"].startswith("task 'pay.charge' at step 'charge[1]': ")
    assert [b["input"]["amount"] for b in sim.scripts["pay.charge"].seen] == [1, 3]


def test_a_compensation_breaking_its_input_contract_fails_the_compensation() -> None:
    tasks = {"inv.release": {"input": {"type": "object", "required": ["reservation"]}}}
    steps = {"reserve": {"task": "inv.reserve", "compensate": {"task": "inv.release", "input": {}}},
             "boom": {"after": ["reserve"], "task": "t.boom"}}
    sim = sim_with(steps, tasks=tasks)
    sim.worker("inv.reserve", succeed({}))
    sim.worker("t.boom", fail("BOOM", retryable=False))
    sim.worker("inv.release", succeed({}))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    d = sim.describe(eid)
    assert d["steps"]["compensate:reserve"]["error"]["code"] == "INPUT_CONTRACT_VIOLATION"
    assert d["status"] == "FAILED" and sim.scripts["inv.release"].seen == []


def test_a_failed_attempt_is_retried_as_before_and_only_the_success_is_checked() -> None:
    sim = sim_with({"charge": {"task": "pay.charge", "input": {"amount": 1}, "retry": {"max_attempts": 2,
                                                                                       "backoff": "1s"}}},
                   tasks=TASKS)
    sim.worker("pay.charge", fail("BUSY"), succeed({"charge_id": "c1"}))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert sim.describe(eid)["status"] == "COMPLETED"


# -- inline steps (the function runs in the decider's invocation) ----------------------------------

INLINE_RUNS: list[Any] = []


def bad_charge(input: Any, ctx: Any) -> dict[str, Any]:
    INLINE_RUNS.append(input)
    return {"charge_id": None}


def test_an_inline_step_is_checked_like_a_worker_step() -> None:
    from tests.unit.inline_world import World

    INLINE_RUNS.clear()
    w = World({"pay.charge": bad_charge})
    step = {"task": "pay.charge", "inline": True, "input": {"amount": "{% input.a %}"}}
    w.register(definition({"charge": step}, name="inl", tasks=TASKS))
    eid = w.decider.start("inl", None, {"a": 1}, "e1")
    w.settle()
    d = w.api.describe(eid)
    assert d["status"] == "FAILED" and d["error"]["code"] == "OUTPUT_CONTRACT_VIOLATION"
    assert "output.charge_id: null is not of type 'string'" in d["error"]["message"]
    assert [e["type"] for e in w.events(eid) if e.get("step") == "charge"] == [
        "StepScheduled", "StepAttemptFailed", "StepFailed"]
    eid = w.decider.start("inl", None, {"a": "one"}, "e2")  # a bad input: the function never runs
    w.settle()
    assert w.api.describe(eid)["error"]["code"] == "INPUT_CONTRACT_VIOLATION"
    assert INLINE_RUNS == [{"amount": 1}]


# -- retry_on: a policy that names the code retries it ----------------------------------------------

def test_retry_on_output_contract_violation_retries_until_an_output_keeps_the_contract() -> None:
    sim = sim_with({"charge": {"task": "pay.charge", "input": {"amount": 1}, "retry": {
        "max_attempts": 3, "backoff": "1s", "retry_on": ["OUTPUT_CONTRACT_VIOLATION"]}}}, tasks=TASKS)
    sim.worker("pay.charge", succeed({"charge_id": None}), succeed({"charge_id": "c2"}))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED" and d["steps"]["charge"]["attempt"] == 2
    assert unit_types(sim, eid, "charge") == ["StepScheduled", "StepDispatched", "StepAttemptFailed",
                                              "RetryScheduled", "StepScheduled", "StepDispatched",
                                              "StepSucceeded"]
    scheduled = events(sim, eid, "StepScheduled")[0]
    assert scheduled["retry"]["retry_on"] == ["OUTPUT_CONTRACT_VIOLATION"]  # recorded with the attempt


def test_retry_on_also_retries_a_code_the_worker_marked_not_retryable() -> None:
    sim = sim_with({"a": {"task": "t.a", "retry": {"max_attempts": 2, "backoff": "0s",
                                                    "retry_on": ["RATE_LIMITED"]}}})
    sim.worker("t.a", fail("RATE_LIMITED", retryable=False), succeed("ok"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert sim.describe(eid)["status"] == "COMPLETED"


def test_a_policy_without_retry_on_records_the_same_shape_as_before() -> None:
    sim = sim_with({"a": {"task": "t.a", "retry": {"max_attempts": 2}}})
    sim.worker("t.a", succeed("ok"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert "retry_on" not in events(sim, eid, "StepScheduled")[0]["retry"]


def test_retry_on_naming_a_code_that_can_never_be_retried_is_refused() -> None:
    doc = definition({"a": {"task": "t.a", "retry": {"retry_on": ["INPUT_CONTRACT_VIOLATION", "BUSY"],
                                                     "non_retryable": ["BUSY"]}}})
    assert [str(p) for p in validate_definition(doc)] == [
        "steps.a.retry.retry_on: INPUT_CONTRACT_VIOLATION is never retried: it is decided before an attempt "
        "runs or ends the execution",
        "steps.a.retry.retry_on: BUSY also in non_retryable: a code is either retried or not"]
    not_a_list = definition({"a": {"task": "t.a", "retry": {"retry_on": "X"}}})
    assert [str(p) for p in validate_definition(not_a_list)] == [
        "steps.a.retry.retry_on: must be a list of error codes (strings)"]
    from orbit.core.runtime.code.specs import retry_policy

    with pytest.raises(TypeError, match="retry.retry_on: EXPRESSION_ERROR is never retried"):
        retry_policy({"retry_on": ["EXPRESSION_ERROR"]})
    policy = retry_policy({"retry_on": ["OUTPUT_CONTRACT_VIOLATION"]})
    assert policy.retry_on == ("OUTPUT_CONTRACT_VIOLATION",)


# -- bounded: a contract's regular expressions run on RE2 -------------------------------------------

def test_contract_patterns_never_run_on_pythons_backtracking_re(monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    def backtracking(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a task contract's pattern ran on Python's re")

    monkeypatch.setattr(re, "search", backtracking)  # what jsonschema's own keywords call
    c = TaskContracts.of({"t": {"output": {
        "type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}},
        "patternProperties": {"^(x+)+$": {"type": "integer"}}, "additionalProperties": False}}})
    assert c is not None
    err = c.check("t", "u", "output", {"s": "a" * 50_000 + "b"})  # catastrophic on a backtracking engine
    assert err is not None and err.details["errors"][0]["path"] == "output.s"
    assert "does not match '^(a+)+$'" in err.message
    err = c.check("t", "u", "output", {"s": "a", "x" * 40 + "y": 1})
    assert err is not None and "does not match any of the regexes: '^(x+)+$'" in err.message
    err = c.check("t", "u", "output", {"s": "a", "xx": "1"})
    assert err is not None and err.details["errors"][0]["path"] == "output.xx"
    assert c.check("t", "u", "output", {"s": "aaa", "xxx": 1}) is None


def test_a_pattern_re2_cannot_run_fails_the_step_naming_it() -> None:
    # Registering it is refused; one stored before that rule still loads, and its step fails.
    from orbit.errors import ValidationError
    from orbit.testing.simulator import Simulator

    lookahead = {"output": {"type": "string", "pattern": "(?=x)x"}}
    doc = definition({"a": {"task": "t.a"}}, tasks={"t.a": lookahead})
    with pytest.raises(ValidationError, match=r"tasks\.t\.a\.output\.pattern: regular expression /\(\?="):
        parse_definition(doc)
    sim = Simulator(start_ms=T0)
    sim.register(parse_definition(doc, stored=True))
    sim.worker("t.a", succeed("x"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    error = sim.describe(eid)["steps"]["a"]["error"]
    assert error["code"] == "OUTPUT_CONTRACT_VIOLATION" and not error["retryable"]
    assert error["message"].startswith(
        "task 't.a' at step 'a': tasks.t.a.output cannot be applied: "
        "tasks.t.a.output.pattern: regular expression /(?=x)x/ is not supported")


def test_an_on_signal_handler_step_is_checked_too() -> None:
    sim = sim_with({"nap": {"sleep": "1h"}}, on_signal={"addr": {
        "steps": {"update": {"task": "crm.update", "input": {"address": "{% event.address %}"}}}}},
        tasks={"crm.update": {"input": {"type": "object", "properties": {"address": {"type": "string"}}}}})
    sim.worker("crm.update", succeed({}))
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.signal(eid, "addr", {"address": 42})
    sim.run_until_idle()
    failed = [e for e in events(sim, eid, "StepFailed") if e["step"].endswith(":update")]
    assert len(failed) == 1 and failed[0]["error"]["code"] == "INPUT_CONTRACT_VIOLATION"
    assert "input.address: 42 is not of type 'string'" in failed[0]["error"]["message"]
    assert sim.scripts["crm.update"].seen == []


def test_retry_on_of_non_strings_is_reported_not_crashed() -> None:
    """Found by test_definition_fuzz: `retry_on: [[]]` once raised TypeError (unhashable list)."""
    from orbit.core.definition.validate import validate_definition

    for bad in ([[]], [{}], [1], "X"):
        doc = {"orbit": 1, "name": "w", "steps": {"a": {"task": "t", "retry": {"retry_on": bad,
                                                                              "non_retryable": [[]]}}}}
        problems = validate_definition(doc)
        text = str(problems)
        assert "retry_on" in text and "must be a list of error codes" in text, text
