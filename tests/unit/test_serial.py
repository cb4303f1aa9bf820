"""The shared tagged-dataclass JSON form (orbit.core.history.serial) keeps each caller's exact wording."""

import pytest
from orbit.core.history.effects import EFFECT_TYPES, NotifyParent, effect_from_dict
from orbit.core.history.events import StepFailed, TaskError, event_from_dict
from orbit.core.history.messages import MESSAGE_TYPES, message_from_dict
from orbit.core.history.serial import known_fields, lookup, registry, tagged_dict
from orbit.errors import ValidationError


def test_tagged_dict_puts_the_tag_first_and_task_errors_as_dicts() -> None:
    err = TaskError("E", "m", retryable=False)
    d = tagged_dict(StepFailed("s", err), "type", "StepFailed")
    assert list(d) == ["type", "step", "error", "fatal"]
    assert d["error"] == {"code": "E", "message": "m", "retryable": False, "details": None}
    assert StepFailed("s", err).to_dict() == d
    assert event_from_dict(d) == StepFailed("s", err)


def test_known_fields_drops_unknown_keys() -> None:
    assert known_fields(NotifyParent, {"parent_id": "p", "extra": 1}) == {"parent_id": "p"}


def test_registry_and_lookup() -> None:
    types = registry("KIND", NotifyParent)
    assert types == {"notify_parent": NotifyParent}
    assert lookup(types, {"kind": "notify_parent"}, "kind", "effect.kind") is NotifyParent
    with pytest.raises(ValidationError) as e:
        lookup(types, {"kind": "nope"}, "kind", "x.kind", what="thing ")
    assert "unknown thing kind 'nope'" in str(e.value) and "x.kind" in str(e.value)


def test_unknown_effect_and_message_kinds_keep_their_messages() -> None:
    with pytest.raises(ValidationError) as e:
        effect_from_dict({"kind": "bogus"})
    assert "unknown effect kind 'bogus'" in str(e.value) and "effect.kind" in str(e.value)
    assert "expected one of" not in str(e.value)
    with pytest.raises(ValidationError) as e:
        message_from_dict({"kind": "bogus"})
    assert f"unknown kind 'bogus'; expected one of {sorted(MESSAGE_TYPES)}" in str(e.value)
    assert "message.kind" in str(e.value)
    # continue_decision; forward_signal and unpark (issue 10a); redrive and fork (issue 10b);
    # the update message (issue 13); pause and unpause (issue 31)
    assert len(EFFECT_TYPES) == 12 and len(MESSAGE_TYPES) == 15
