"""Task contracts on code workflows: `@orbit.workflow(..., tasks={...})` is checked by the decider as
a definition's `tasks:` is, and workflow code catches a violation as `orbit.ContractViolation`."""

from __future__ import annotations

from typing import Any

import orbit
import pytest
from orbit.errors import ValidationError
from orbit.testing.simulator import Simulator, succeed
from orbit.workflow import CodeRegistry

from tests.unit.inline_world import World

CHARGE = {"input": {"type": "object", "required": ["amount"], "properties": {"amount": {"type": "number"}}},
          "output": {"type": "object", "required": ["charge_id"],
                     "properties": {"charge_id": {"type": "string"}}}}


def _flow(registry: CodeRegistry, name: str, **options: Any) -> Any:
    @orbit.workflow(name, build="b1", registry=registry, tasks={"pay.charge": CHARGE}, **options)
    def flow(ctx: Any, input: Any) -> Any:
        try:
            return ctx.step("pay.charge", {"amount": input["amount"]}, on_exhausted="continue_workflow")
        except orbit.ContractViolation as e:
            ctx.step("pay.refund", {"why": e.code})
            return {"caught": type(e).__name__, "side": e.side, "task": e.task, "path": e.path}
    return flow


def _run(flow: Any, amount: Any, output: Any) -> tuple[Simulator, str]:
    sim = Simulator(seed="contracts-code")
    sim.register(flow)
    sim.worker("pay.charge", succeed(output))
    sim.worker("pay.refund", succeed({}))
    eid = sim.start(flow.name, {"amount": amount}, id="c1")
    sim.run()
    return sim, eid


def test_workflow_code_catches_a_bad_output_as_contract_violation_and_compensates() -> None:
    sim, eid = _run(_flow(CodeRegistry(), "code-out"), 5, {"charge_id": 9})
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED", d
    assert d["output"] == {"caught": "ContractViolation", "side": "output", "task": "pay.charge",
                           "path": "output.charge_id"}
    assert sim.scripts["pay.refund"].seen[0]["input"] == {"why": "OUTPUT_CONTRACT_VIOLATION"}


def test_a_bad_input_is_refused_before_the_worker_and_caught() -> None:
    sim, eid = _run(_flow(CodeRegistry(), "code-in"), "five", {"charge_id": "c"})
    d = sim.describe(eid)
    assert d["output"] == {"caught": "ContractViolation", "side": "input", "task": "pay.charge",
                           "path": "input.amount"}
    assert sim.scripts["pay.charge"].seen == []
    sim2, eid2 = _run(_flow(CodeRegistry(), "code-ok"), 5, {"charge_id": "c"})
    assert sim2.describe(eid2)["output"] == {"charge_id": "c"}  # a valid call is untouched


def test_a_fail_run_step_fails_the_execution_with_the_contract_code() -> None:
    registry = CodeRegistry()

    @orbit.workflow("code-failrun", build="b1", registry=registry, tasks={"pay.charge": CHARGE})
    def flow(ctx: Any, input: Any) -> Any:
        return ctx.step("pay.charge", {"amount": 1})

    sim, eid = _run(flow, 1, {"charge_id": None})
    d = sim.describe(eid)
    assert d["status"] == "FAILED" and d["error"]["code"] == "OUTPUT_CONTRACT_VIOLATION"
    assert "task 'pay.charge' at step '1.pay.charge': output.charge_id: null is not of type 'string'" \
        in d["error"]["message"]


def test_invalid_contracts_are_refused_by_the_decorator_naming_the_path() -> None:
    with pytest.raises(ValidationError) as err:
        orbit.workflow("code-bad", registry=CodeRegistry(), tasks={
            "pay.charge": {"output": {"$ref": "http://169.254.169.254/latest"}, "inputs": {}}})
    text = str(err.value)
    assert "workflow.tasks.pay.charge.output: invalid JSON Schema: $ref: " in text
    assert "workflow.tasks.pay.charge.inputs: unknown key" in text
    with pytest.raises(ValidationError, match="workflow.tasks: tasks must be a dict"):
        orbit.workflow("code-bad", registry=CodeRegistry(), tasks=["pay.charge"])  # type: ignore[arg-type]


def half(x: int) -> Any:
    return {"half": x / 2}


def test_ctx_run_is_checked_under_its_task_name() -> None:
    registry = CodeRegistry()
    task = f"{__name__}:half"

    @orbit.workflow("code-run", build="b1", registry=registry,
                    tasks={task: {"output": {"type": "object", "properties": {"half": {"type": "integer"}}}}})
    def flow(ctx: Any, input: Any) -> Any:
        try:
            return ctx.run(half, input, on_exhausted="continue_workflow")
        except orbit.ContractViolation as e:
            return e.message

    w = World({})
    w.registry.register(flow)
    eid = w.api.start("code-run", None, 3, "e1")
    w.settle()
    assert w.api.describe(eid)["output"] == (
        f"task '{task}' at step '1.half': output.half: 1.5 is not of type 'integer' "
        f"(contract tasks.{task}.output)")
    eid = w.api.start("code-run", None, 4, "e2")
    w.settle()
    assert w.api.describe(eid)["output"] == {"half": 2.0}


def test_a_history_recorded_without_the_contract_replays_cleanly_under_it() -> None:
    """The bad output was recorded as a success before `tasks=` existed: replaying that history on
    the code that now declares the contract finds no divergence (replay never checks again)."""
    from orbit.testing import replay

    old = CodeRegistry()

    @orbit.workflow("code-replay", build="b1", registry=old)
    def before(ctx: Any, input: Any) -> Any:
        return ctx.step("pay.charge", {"amount": input["amount"]})

    sim, eid = _run(before, 5, {"charge_id": 9})  # recorded: StepSucceeded with a number
    assert sim.describe(eid)["status"] == "COMPLETED"
    history = sim.history(eid)

    @orbit.workflow("code-replay", build="b1", registry=CodeRegistry(), tasks={"pay.charge": CHARGE})
    def after(ctx: Any, input: Any) -> Any:
        return ctx.step("pay.charge", {"amount": input["amount"]})

    assert replay(history, after) is None
