"""The base of every history event, and the decorator that makes an event class (core/history/events.py
has Orbit's own events, durable_events.py the Lambda durable execution API's). Apart so that both
modules build on it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar, TypeVar, dataclass_transform

from orbit.core.history.serial import tagged_dict
from orbit.core.history.task_error import JSON


@dataclass(frozen=True)
class Event:
    """Base of all events. `TYPE` is the JSON `type`; `_ERRORS` names TaskError fields."""

    TYPE: ClassVar[str] = "Event"
    _ERRORS: ClassVar[tuple[str, ...]] = ()

    @property
    def type(self) -> str:
        return self.TYPE

    def to_dict(self) -> dict[str, JSON]:
        return tagged_dict(self, "type", self.TYPE)




_E = TypeVar("_E", bound=Event)


@dataclass_transform(frozen_default=True)
def event(cls: type[_E]) -> type[_E]:
    """Make an event class: a frozen dataclass whose JSON `type` is its own name (EVENT_TYPES, at the
    end of events.py, lists every class made so)."""
    cls = dataclass(frozen=True)(cls)
    cls.TYPE = cls.__name__
    cls._ERRORS = tuple(f.name for f in fields(cls) if f.name == "error")
    return cls
