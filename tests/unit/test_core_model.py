"""Events, TaskError, messages and effects: stable JSON forms and clear validation errors."""

from __future__ import annotations

import pickle
from dataclasses import fields

import pytest
from orbit.core.history.effects import EFFECT_TYPES, effect_from_dict
from orbit.core.history.events import (
    EVENT_TYPES,
    Recorded,
    TaskError,
    UnknownEvent,
    event_from_dict,
    recorded_from_dict,
)
from orbit.core.history.messages import MESSAGE_TYPES, message_from_dict
from orbit.core.history.model import fold
from orbit.core.history.state import element_key, parse_key
from orbit.errors import OrbitError, ValidationError
from orbit.testing.simulator import hang, succeed

from tests.unit.dsl_harness import events, sim_with, unit_types

SAMPLE = {"str": "x", "int": 3, "bool": True, "TaskError": TaskError("E", "m", False, {"d": 1})}


def sample_for(annotation: str) -> object:
    if "TaskError" in annotation:
        return SAMPLE["TaskError"]
    if annotation.startswith("int"):
        return 3
    if annotation.startswith("bool"):
        return True
    if annotation.startswith("str"):
        return "x"
    if annotation.startswith("list"):
        return ["a", "b"]
    if annotation.startswith("dict"):
        return {"execution_id": "p", "step": "s"}
    return {"any": [1, None]}


@pytest.mark.parametrize("name", sorted(EVENT_TYPES))
def test_every_event_round_trips_through_json(name: str) -> None:
    cls = EVENT_TYPES[name]
    ev = cls(**{f.name: sample_for(str(f.type)) for f in fields(cls)})
    d = Recorded(7, 99, ev).to_dict()
    assert d["type"] == name and d["seq"] == 7 and d["timestamp_ms"] == 99
    assert recorded_from_dict(d) == Recorded(7, 99, ev)


def test_unknown_event_types_are_kept_verbatim_and_ignored() -> None:
    raw = {"type": "FromTheFuture", "x": 1}
    ev = event_from_dict(raw)
    assert isinstance(ev, UnknownEvent) and ev.to_dict() == raw and ev.type == "FromTheFuture"
    assert fold("e", [Recorded(1, 1, ev)]).last_seq == 1
    with pytest.raises(ValidationError, match="StepSucceeded"):
        event_from_dict({"type": "StepSucceeded"})  # required `step` missing
    with pytest.raises(ValidationError, match="code"):
        event_from_dict({"type": "StepFailed", "step": "a", "error": {"message": "no code"}})


def test_task_error_is_a_value_and_an_exception() -> None:
    e = TaskError("CARD_DECLINED", "declined", retryable=False, details={"bank": "x"})
    assert isinstance(e, OrbitError)
    with pytest.raises(TaskError) as info:
        raise e
    assert info.value == TaskError.from_dict(e.to_dict()) and hash(info.value) == hash(e)
    assert e.to_dict() == {
        "code": "CARD_DECLINED",
        "message": "declined",
        "retryable": False,
        "details": {"bank": "x"},
    }
    assert TaskError.from_dict({"code": "X"}).retryable is True
    assert pickle.loads(pickle.dumps(e)) == e
    with pytest.raises(AttributeError):
        e.code = "OTHER"  # type: ignore[misc]
    assert e.replace(message="other").message == "other" and e.message == "declined"


@pytest.mark.parametrize("kind", sorted(MESSAGE_TYPES))
def test_messages_name_every_missing_field(kind: str) -> None:
    cls = MESSAGE_TYPES[kind]
    required = ["execution_id", "id"] + [k for k, (_, req) in cls.SPEC.items() if req]
    with pytest.raises(ValidationError) as info:
        message_from_dict({"kind": kind})
    assert sorted(p.path for p in info.value.problems) == sorted(f"message.{k}" for k in required)


def test_message_types_and_errors_are_checked() -> None:
    with pytest.raises(ValidationError, match=r"message.unit: has the wrong type \(int\)"):
        message_from_dict({"kind": "result", "execution_id": "e", "id": "1", "unit": 5, "token": "t"})
    with pytest.raises(ValidationError, match="message.error"):
        message_from_dict(
            {
                "kind": "result",
                "execution_id": "e",
                "id": "1",
                "unit": "u",
                "token": "t",
                "error": {"nocode": 1},
            }
        )
    with pytest.raises(ValidationError, match="unknown kind"):
        message_from_dict({"kind": "nope"})
    m = message_from_dict({"kind": "cancel", "execution_id": "e", "id": "1", "force": True, "extra": 1})
    assert m.to_dict() == {
        "kind": "cancel",
        "execution_id": "e",
        "id": "1",
        "reason": "",
        "force": True,
        "parent_id": None,
    }


@pytest.mark.parametrize("kind", sorted(EFFECT_TYPES))
def test_every_effect_round_trips(kind: str) -> None:
    cls = EFFECT_TYPES[kind]
    eff = cls(**{f.name: sample_for(str(f.type)) for f in fields(cls)})
    assert effect_from_dict(eff.to_dict()) == eff
    with pytest.raises(ValidationError):
        effect_from_dict({"kind": kind})


def test_unit_keys() -> None:
    assert parse_key("ship[12]") == (False, "ship", 12)
    assert parse_key("compensate:ship[3]") == (True, "ship", 3)
    assert parse_key("odd[x]") == (False, "odd[x]", None)
    assert element_key("a", 2) == "a[2]"


def test_heartbeats_are_recorded_for_the_live_attempt_only() -> None:
    sim = sim_with({"a": {"task": "t.a"}})
    sim.worker("t.a", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    token = events(sim, eid, "StepScheduled")[0]["token"]
    for i, tok in enumerate([token, "not-a-token"]):
        sim.engine.handle(
            {
                "kind": "heartbeat",
                "execution_id": eid,
                "id": f"h{i}",
                "unit": "a",
                "token": tok,
                "details": {"pct": 40},
            }
        )
    assert unit_types(sim, eid, "a") == ["StepScheduled", "StepDispatched", "StepHeartbeat"]
    assert sim.store.load(eid).fold().units["a"].heartbeat == {"pct": 40}


def test_for_elements_are_compensated_one_by_one_with_their_item() -> None:
    sim = sim_with(
        {
            "ship": {
                "for": "{% input.items %}",
                "task": "s.ship",
                "input": "{% item %}",
                "compensate": {"task": "s.unship", "input": {"sku": "{% item %}", "i": "{% index %}"}},
            },
            "fail": {"task": "t.fail", "after": ["ship"]},
        }
    )
    sim.worker("s.ship", succeed())
    sim.worker("s.unship", lambda inp, ctx: inp)
    from orbit.testing.simulator import fail

    sim.worker("t.fail", fail("BOOM", retryable=False))
    eid = sim.start("wf", {"items": ["a", "b"]}, id="e1")
    sim.run()
    d = sim.describe(eid)
    assert events(sim, eid, "CompensationStarted")[0]["steps"] == ["ship[1]", "ship[0]"]
    assert d["steps"]["compensate:ship[1]"]["output"] == {"sku": "b", "i": 1}
    assert d["steps"]["compensate:ship[0]"]["output"] == {"sku": "a", "i": 0}
    assert d["status"] == "FAILED" and d["compensation"] == "completed"
