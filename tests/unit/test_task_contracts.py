"""`tasks:` in a definition: each called task's input/output JSON Schemas."""

from __future__ import annotations

from orbit.core.definition import parse_definition, validate_definition


def doc(tasks):
    return {"orbit": 1, "name": "wf", "tasks": tasks,
            "steps": {"a": {"task": "t.one", "compensate": {"task": "t.undo"}}}}


def messages(document) -> list[str]:
    return [str(p) for p in validate_definition(document)]


def test_contracts_for_called_tasks_and_their_compensations_are_kept():
    tasks = {"t.one": {"input": {"type": "object"}, "output": {"type": "object", "required": ["id"]},
                       "description": "makes a thing"},
             "t.undo": {"input": {"type": "object"}}}
    d = parse_definition(doc(tasks))
    assert d.tasks["t.one"]["output"] == {"type": "object", "required": ["id"]}
    assert set(d.tasks) == {"t.one", "t.undo"}
    assert parse_definition(doc({})).tasks == {}


def test_a_contract_for_a_task_nobody_calls_is_refused_with_a_suggestion():
    assert messages(doc({"t.on": {"output": {}}})) == [
        "tasks.t.on: no step calls task 't.on' (did you mean 't.one'?) (tasks called: t.one, t.undo)"]


def test_bad_contracts_are_refused_with_their_paths():
    found = messages(doc({"t.one": {"output": {"type": "thing"}, "inputs": {}}, "t.undo": []}))
    assert any(m.startswith("tasks.t.one.output: ") for m in found), found
    assert any(m.startswith("tasks.t.one.inputs: unknown key in a task contract (did you mean 'input'?)")
               for m in found), found
    assert any(m.startswith("tasks.t.undo: must be a mapping") for m in found), found
    assert messages({**doc({}), "tasks": "x"}) == [
        "tasks: must be a mapping of task names to {input, output} schemas, not a string"]
