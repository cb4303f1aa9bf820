"""Replaying a recorded history through the current code or definition (CI's deploy check).

`find_divergence(workflow, history)` answers: would this execution, at the
point its history reached, go on under `workflow` without parking? For a code
workflow the history is folded and replayed once, cold, on the code under test
(as a decider does after a deploy): the code must make the recorded calls in
order with the same values (`code_compare`), and a history that ended must end
the same way (same output for COMPLETED, a failure for FAILED, a continue-as-new
with the same input). For a definition, the interpreter runs at every prefix and
may only ask for units the history records, ending as it ended.

Pure: no I/O; `orbit.testing.replay` and `orbit replay` are the edges.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from orbit.core.history.events import Recorded, recorded_from_dict
from orbit.core.history.model import apply
from orbit.core.history.state import ExecutionState
from orbit.core.runtime import commands as C
from orbit.errors import ValidationError

ENDINGS = MappingProxyType({"WorkflowCompleted": "COMPLETED", "WorkflowFailed": "FAILED",
           "WorkflowContinuedAsNew": "CONTINUED", "WorkflowCancelled": "CANCELLED",
           "WorkflowTimedOut": "TIMED_OUT"})


@dataclass(frozen=True)
class Divergence:
    """Where a history stops replaying: a one-line message and its details."""

    execution_id: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)


def parse_history(value: Any, where: str = "history") -> list[Recorded]:
    """The events of `orbit history ID --json` (a list), or of an object with a `history` list;
    ValidationError naming `where` for anything that is not a history."""
    events = value.get("history") if isinstance(value, dict) else value
    if not isinstance(events, list) or not events:
        raise ValidationError("not a history: expected a non-empty list of events "
                              "(as `orbit history ID --json` prints)", where)
    records = []
    for i, d in enumerate(events):
        try:
            records.append(recorded_from_dict(d))
        except ValidationError as e:
            raise ValidationError(f"not a history: event #{i + 1}: {e}", where) from None
    if records[0].event.type not in ("WorkflowCreated", "CancelRequested"):
        raise ValidationError(f"not a history: it begins with {records[0].event.type}, "
                              "not WorkflowCreated", where)
    if [r.seq for r in records] != sorted({r.seq for r in records}):
        raise ValidationError("not a history: seq numbers are not increasing", where)
    return records


def fold_history(records: list[Recorded]) -> ExecutionState:
    first = records[0].event.to_dict()
    state = ExecutionState(str(first.get("execution_id") or "replayed"))
    for r in records:
        apply(state, r)
    return state


def find_divergence(workflow: Any, history: Any) -> Divergence | None:
    """None when `history` replays cleanly through `workflow`, else the first divergence."""
    records = history if history and isinstance(history[0], Recorded) else parse_history(history)
    state = fold_history(records)
    if state.workflow and state.workflow != workflow.name:
        raise ValidationError(f"the history is of workflow {state.workflow!r}, not {workflow.name!r}",
                              "workflow")
    ending = next((ENDINGS[r.event.type] for r in reversed(records) if r.event.type in ENDINGS), None)
    if getattr(workflow, "kind", None) == "code":
        return _code(workflow, state, records, ending)
    return _definition(workflow, records, ending)


def _code(workflow: Any, state: ExecutionState, records: list[Recorded],
          ending: str | None) -> Divergence | None:
    from orbit.core.runtime.code.instance import Instance

    state.build = workflow.build
    inst = Instance(workflow, state.id)
    try:
        commands = C.flatten(inst.feed(state))
    finally:
        inst.discard()
    park = next((c for c in commands if isinstance(c, C.Park)), None)
    if park is not None:
        details = park.error.details if isinstance(park.error.details, dict) else {}
        return Divergence(state.id, park.error.message, {"code": park.error.code, **details})
    return _ending(state.id, commands, records, ending)


def _definition(workflow: Any, records: list[Recorded], ending: str | None) -> Divergence | None:
    from orbit.core.decider.decide import runtime_for

    final = fold_history(records)
    runtime = runtime_for(workflow)
    state = ExecutionState(final.id)
    for r in records:
        apply(state, r)
        if state.terminal or not state.created:
            continue
        for c in C.flatten(runtime.run(workflow, state, r.timestamp_ms)):
            unit = c.step.unit if isinstance(c, C.ScheduleStep) else getattr(c, "unit", None)
            if isinstance(c, (C.ScheduleStep, C.WaitUntil, C.WaitForSignal, C.LinkChild)) and \
                    unit not in final.units:
                return Divergence(final.id, f"execution {final.id!r}: after seq {r.seq} ({r.event.type}) the "
                                  f"definition asks for step {unit!r}, which the history never records",
                                  {"seq": r.seq, "requested": unit})
            if isinstance(c, C.Complete) and ending not in (None, "COMPLETED"):
                return Divergence(final.id, f"execution {final.id!r}: after seq {r.seq} the definition "
                                  f"completes, the history ended {ending}", {"seq": r.seq})
    return None


FINAL = (C.Complete, C.Fail, C.ContinueAsNew, C.Cancel, C.Timeout)


def _ending(eid: str, commands: list[C.Command], records: list[Recorded],
            ending: str | None) -> Divergence | None:
    finals = [c for c in commands if isinstance(c, FINAL)]
    if ending is None or ending in ("CANCELLED", "TIMED_OUT"):
        return None
    last = next(r.event.to_dict() for r in reversed(records) if r.event.type in ENDINGS)
    if ending == "COMPLETED":
        got = next((c for c in finals if isinstance(c, C.Complete)), None)
        if got is not None and _same(got.output, last.get("output")):
            return None
        what = f"completes with {_short(got.output)}" if got else _asks(commands)
        return Divergence(eid, f"execution {eid!r}: the history completed with {_short(last.get('output'))}, "
                          f"the code now {what}", {"ending": ending})
    if ending == "FAILED":
        if any(isinstance(c, C.Fail) for c in finals):
            return None
        return Divergence(eid, f"execution {eid!r}: the history failed "
                          f"({(last.get('error') or {}).get('code')}), the code now {_asks(commands)}",
                          {"ending": ending})
    got_can = next((c for c in finals if isinstance(c, C.ContinueAsNew)), None)
    if got_can is not None and _same(got_can.input, last.get("input")):
        return None
    return Divergence(eid, f"execution {eid!r}: the history continued as new with "
                      f"{_short(last.get('input'))}, the code now {_asks(commands)}", {"ending": ending})


def _asks(commands: list[C.Command]) -> str:
    if not commands:
        return "waits for nothing the history records"
    c = commands[0]
    if isinstance(c, C.Complete):
        return f"completes with {_short(c.output)}"
    if isinstance(c, C.ContinueAsNew):
        return f"continues as new with {_short(c.input)}"
    unit = c.step.unit if isinstance(c, C.ScheduleStep) else getattr(c, "unit", None)
    return f"asks for {type(c).__name__} {unit!r}" if unit else f"asks for {type(c).__name__}"


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:120] + "..."
