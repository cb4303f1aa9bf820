"""`orbit simulate`: generated inputs and task outputs, injected failures, invariants, replayable seeds."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from orbit.cli.main import main
from orbit.core.definition import load_definition, parse_definition
from orbit.core.definition.contracts import check_schema
from orbit.testing.generate import draw
from orbit.testing.simulate import Rates, _compensation_problems, replay, simulate

ROOT = Path(__file__).resolve().parents[2]
PLANTED = ROOT / "tests" / "fixtures" / "simulate" / "planted_empty_list.yaml"
SAGA = ROOT / "examples" / "order_fulfilment.yaml"


def test_the_planted_empty_list_bug_is_found_with_a_seed_that_replays_it(capsys):
    assert main(["simulate", str(PLANTED), "--runs", "15", "--seed", "3"]) == 1
    out = capsys.readouterr().out
    assert "FAILED EXPRESSION_ERROR" in out
    replays = re.findall(r"replay: (orbit simulate .*)", out)
    assert replays, out
    m = re.search(r"FAILING seed (\d+) \(FAILED EXPRESSION_ERROR\):\n  input: (.*)\n  (EXPRESSION_ERROR: .*)",
                  out)
    assert m, out
    seed, shown_input, violation = m.groups()
    command = next(c for c in replays if f"--replay {seed} " in c)
    assert main(shlex.split(command)[1:]) == 1  # the printed command, as a user would paste it
    replayed = capsys.readouterr().out
    assert f"input: {shown_input}" in replayed
    assert f"violation: {violation}" in replayed
    assert "label.for: must give an array" in violation


def test_runs_are_a_function_of_the_seed():
    d = load_definition(PLANTED)
    first = simulate(d, 12, 7, Rates())
    again = simulate(d, 12, 7, Rates())
    assert [(r.seed, r.outcome, r.input, r.violations) for r in first.runs] == \
        [(r.seed, r.outcome, r.input, r.violations) for r in again.runs]
    one = first.runs[5]
    assert replay(d, one.seed, Rates()).history == one.history
    other = simulate(d, 12, 8, Rates())
    assert [r.seed for r in other.runs] != [r.seed for r in first.runs]


def test_the_order_saga_holds_every_invariant(capsys):
    assert main(["simulate", str(SAGA), "--runs", "25", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "invariants: 25 of 25 runs hold every invariant" in out
    assert re.search(r"COMPLETED\s+\d+\s+[\d.]+%", out)


def test_injected_failures_and_timeouts_show_in_the_outcomes():
    d = load_definition(SAGA)
    always_fail = simulate(d, 5, 1, Rates(failure=1.0, timeout=0.0)).outcomes
    assert set(always_fail) == {"FAILED SIMULATED_FAILURE"}, always_fail
    always_hang = simulate(d, 3, 1, Rates(failure=0.0, timeout=1.0)).outcomes
    assert set(always_hang) == {"FAILED TIMEOUT"}, always_hang


def test_generated_values_satisfy_their_schema():
    schema = load_definition(SAGA).input_schema
    for seed in range(40):
        assert check_schema(schema, draw(schema, seed), "INPUT_CONTRACT_VIOLATION") is None
    assert draw(schema, 11) == draw(schema, 11)


def test_a_task_input_breaking_its_contract_is_reported():
    d = parse_definition({
        "orbit": 1, "name": "contract", "input": {"type": "object", "required": ["n"],
                                                  "properties": {"n": {"type": "integer"}}},
        "steps": {"a": {"task": "t.one", "input": {"value": "{% input.n %}"}},
                  "b": {"task": "t.two", "input": {"id": "{% steps.a.output.id %}"}}},
        "tasks": {"t.one": {"output": {"type": "object", "properties": {"id": {"type": "string"}}}},
                  "t.two": {"input": {"type": "object", "required": ["id"],
                                      "properties": {"id": {"type": "string"}}}}},
    })
    found = [v for r in simulate(d, 20, 2, Rates(failure=0, timeout=0)).runs for v in r.violations]
    assert any(v.startswith("TASK_CONTRACT: step b would send t.two an input that breaks tasks.t.two.input")
               for v in found)


def test_compensation_out_of_order_is_a_violation():
    def ev(t, step=None, **kw):
        return {"type": t, "step": step, **kw}
    ok = [ev("StepScheduled", "a", compensable=True), ev("StepSucceeded", "a"),
          ev("StepScheduled", "b", compensable=True), ev("StepSucceeded", "b"),
          ev("CompensationStarted"), ev("StepScheduled", "compensate:b"),
          ev("StepScheduled", "compensate:a"), ev("CompensationCompleted")]
    assert _compensation_problems(ok) == []
    wrong = ok[:5] + [ok[6], ok[5], ok[7]]
    assert _compensation_problems(wrong) == [
        "COMPENSATION_ORDER: compensated ['a', 'b'], expected the reverse order of success ['b', 'a']"]


def test_usage_errors_are_one_line(capsys):
    assert main(["simulate", str(SAGA), "--runs", "0"]) == 2
    assert capsys.readouterr().err.strip() == "orbit simulate: --runs 0: must be at least 1, e.g. --runs 500"
    assert main(["simulate", "nope.yaml"]) == 2


def test_child_workflows_are_simulated_with_register(capsys):
    parent = str(ROOT / "examples" / "order_with_invoice.yaml")
    child = str(ROOT / "examples" / "invoicing.yaml")
    common = ["--runs", "10", "--seed", "4", "--timeout-rate", "0"]
    main(["simulate", parent, *common])
    assert "FAILED UNKNOWN_WORKFLOW" in capsys.readouterr().out
    assert main(["simulate", parent, "--register", child, *common]) == 0
    out = capsys.readouterr().out
    assert "UNKNOWN_WORKFLOW" not in out and "COMPLETED" in out


def test_a_schema_no_value_satisfies_stops_the_simulation_with_one_line(tmp_path, capsys):
    path = tmp_path / "u.yaml"
    path.write_text("orbit: 1\nname: u\ninput: {type: object, required: [a], properties: "
                    "{a: {type: string, minLength: 5, maxLength: 2}}}\nsteps:\n  s: {sleep: 1s}\n")
    assert main(["simulate", str(path), "--runs", "3"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("orbit simulate: u: input: cannot generate values"), err


def test_json_output_is_one_document_with_the_failing_runs(capsys):
    import json

    assert main(["simulate", str(PLANTED), "--runs", "8", "--seed", "3", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["runs"] == 8 and sum(doc["outcomes"].values()) == 8
    first = doc["failing"][0]
    assert first["violations"][0].startswith("EXPRESSION_ERROR: label.for")
    assert f"--replay {first['seed']} " in first["replay"]
    assert main(["simulate", str(PLANTED), "--replay", str(first["seed"]), "--json"]) == 1
    again = json.loads(capsys.readouterr().out)
    assert again["input"] == first["input"] and again["violations"] == first["violations"]
    assert again["history"][0]["type"] == "WorkflowCreated"
