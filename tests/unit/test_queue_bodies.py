"""Every body on a queue is built from its class in core/history/messages.py (issue 28 section 1).

Three checks: the real paths (engine, worker, SQS adapter, schedules) send byte for byte what they
sent before the classes (`BEFORE`, captured from the code at a14161d through the same calls), every
body already on a queue parses through its class, and no module of the package builds a queue body
by hand (an AST scan).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import orbit
import pytest
from orbit.adapters.memory import MemoryPayloadStore
from orbit.adapters.sqs import SqsQueues, decode_bodies
from orbit.core.history.events import TaskError
from orbit.core.history.messages import (
    MESSAGE_TYPES,
    Bundle,
    ResultMessage,
    ScheduleFire,
    SignalMessage,
    message_from_dict,
)
from orbit.core.history.queue_bodies import TaskCancel, TaskDispatch, task_message_from_dict
from orbit.core.schedule import state as schedule_state
from orbit.core.schedule.config import parse_config
from orbit.errors import ValidationError
from orbit.service.engine import Engine
from orbit.service.schedules import ScheduleService
from orbit.worker import Worker

from tests.unit.dsl_harness import T0, sim_with

ROOT = Path(orbit.__file__).parents[3]
TRACE = '{"orbit-trace": {"DataType": "String", "StringValue": "Root=1-abc"}}'
TOKEN = "dc27159b90b340cc16f86497201df58e"
_DISPATCH = ('"kind":"dispatch_task","execution_id":"e1","unit":"a","task":"t.a","queue":"t","input":null,'
             f'"attempt":1,"token":"{TOKEN}","idempotency_key":"e1:a","deadline_ms":null,"redelivery":false,'
             '"heartbeat_timeout_ms":60000')
_ANSWER = f'"execution_id":"e1","id":"{{}}","unit":"a","token":"{TOKEN}"'
# (queue, trace attribute, body) as SQS got them; `S`: a random session, `X`: a time stamp
BEFORE = [
    ("tasks", TRACE, "{" + _DISPATCH + "}"),
    ("tasks", None, "{" + _DISPATCH + ',"resent":true}'),
    ("decisions", None, '{"kind":"pause","execution_id":"e1","id":"pause:S","reason":"why","sent_at_ms":X}'),
    ("decisions", None, '{"kind":"unpause","execution_id":"e1","id":"unpause:S","reason":"","sent_at_ms":X}'),
    ("tasks", None, f'{{"kind":"cancel_task","execution_id":"e1","unit":"a","token":"{TOKEN}","queue":"t"}}'),
    ("decisions", None, '{"kind":"started",' + _ANSWER.format("started:S:S") +
     ',"worker_id":"w1","worker_session":X,"sent_at_ms":X}'),
    ("decisions", None, '{"kind":"heartbeat",' + _ANSWER.format("heartbeat:S:S:1") +
     ',"details":{"n":1},"sent_at_ms":X}'),
    ("decisions", None, '{"kind":"result",' + _ANSWER.format("result:S") +
     ',"output":{"y":2},"sent_at_ms":X}'),
    ("decisions", TRACE, '{"kind":"started",' + _ANSWER.format("started:S:S") +
     ',"worker_id":"w1","worker_session":X,"sent_at_ms":X}'),
    ("decisions", TRACE, '{"kind":"result",' + _ANSWER.format("result:S") +
     ',"error":{"code":"E","message":"no","retryable":false,"details":null},"sent_at_ms":X}'),
    ("tasks", TRACE, "{" + _DISPATCH + ',"waiting_for_worker":1}'),
    ("decisions", None, '{"kind":"bundle","execution_id":"e2","id":"bundle:signal:1","messages":['
     '{"kind":"signal","execution_id":"e2","id":"signal:1","name":"go","payload":1,"sent_at_ms":X},'
     '{"kind":"signal","execution_id":"e2","id":"signal:2","name":"go","payload":2,"sent_at_ms":X}]}'),
    ("scheduler", None, '{"kind":"schedule_fire","execution_id":"schedule:s1",'
     '"id":"schedule_fire:s1:1700002800000","schedule_id":"s1","fire_at_ms":1700002800000}'),
]


class _Sqs:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None, str]] = []

    def send_message(self, QueueUrl: str, MessageBody: str, DelaySeconds: int = 0,
                     MessageAttributes: Any = None) -> dict[str, Any]:
        attrs = json.dumps(MessageAttributes) if MessageAttributes else None
        self.sent.append((QueueUrl.rsplit("/", 1)[-1], attrs, MessageBody))
        return {}

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        for e in Entries:
            self.send_message(QueueUrl, e["MessageBody"], e["DelaySeconds"], e.get("MessageAttributes"))
        return {}


class _Clock:
    def now_ms(self) -> int:
        return T0


class _Arm:
    def __init__(self, sqs: _Sqs) -> None:
        self.sqs = sqs

    def arm(self, schedule_id: str, at_ms: int | None, message: dict[str, Any] | None) -> None:
        self.sqs.sent.append(("scheduler", None, json.dumps(message, separators=(",", ":"))))


def _wire() -> list[tuple[str, str | None, str]]:
    """The bodies the real paths send: an engine's dispatch (and its re-send for a redelivered start),
    pause, unpause and a cancel's cancel_task; a worker's started, heartbeat, result, failed result and
    an unserved dispatch sent back; a bundle; a schedule's fire."""
    sqs, clock = _Sqs(), _Clock()
    queues = SqsQueues(sqs, "https://q/decisions", {}, "https://q/tasks", MemoryPayloadStore(), clock=clock)
    sim = sim_with({"a": {"task": "t.a", "heartbeat_timeout": "1m"}, "go": {"wait_for": "go"}})
    engine = Engine(sim.store, queues, sim.timers, MemoryPayloadStore(), sim.registry, clock, sim.engine.ids)
    start = {"kind": "start", "execution_id": "e1", "id": "start:e1", "workflow": "wf", "input": {"x": 1}}
    engine.handle_batch([{**start, "trace": "Root=1-abc"}])
    engine.handle_batch([start], [2])  # redelivered: its commit's dispatch goes again, `resent`
    engine.pause("e1", "why")
    engine.handle_batch(decode_bodies(sqs.sent[-1][2], None))
    engine.unpause("e1", "")
    engine.handle_batch([{"kind": "cancel", "execution_id": "e1", "id": "cancel:1", "reason": "stop"}])
    dispatch = json.loads(sqs.sent[0][2])

    def ok(value: Any, ctx: Any) -> Any:
        ctx.heartbeat({"n": 1})
        return {"y": 2}

    def bad(value: Any, ctx: Any) -> Any:
        raise TaskError("E", "no", False)

    traced = {**dispatch, "trace": "Root=1-abc"}
    Worker(queues, None, clock, tasks={"t.a": ok}, worker_id="w1").process(dispatch)
    Worker(queues, None, clock, tasks={"t.a": bad}, worker_id="w1").process(traced)
    Worker(queues, None, clock, tasks={"t.b": ok}, worker_id="w1").process(traced)  # unserved: sent back
    queues.send_decisions([SignalMessage("e2", f"signal:{n}", "go", n).to_dict() for n in (1, 2)])
    service = ScheduleService(None, _Arm(sqs), engine)
    service._arm(schedule_state.new_state(parse_config({"id": "s1", "workflow": "wf",
                                                        "spec": {"cron": "0 * * * *"}}), T0))
    out = []
    for queue, trace, text in sqs.sent:
        text = re.sub(r'"(worker_session|sent_at_ms)":("[0-9a-f]{32}"|\d+)', r'"\1":X', text)
        out.append((queue, trace, re.sub(r":[0-9a-f]{32}", ":S", text)))
    return out


def test_every_path_sends_the_bytes_it_sent_before_the_classes() -> None:
    assert _wire() == BEFORE


def _parse(body: dict[str, Any]) -> Any:
    if body["kind"] in (TaskDispatch.KIND, TaskCancel.KIND):
        return task_message_from_dict(body)
    if body["kind"] == Bundle.KIND:
        return Bundle.from_dict(body)
    if body["kind"] == ScheduleFire.KIND:
        return ScheduleFire.from_dict(body)
    return message_from_dict(body)


@pytest.mark.parametrize("text", [b for _, _, b in BEFORE])
def test_a_body_on_a_queue_today_parses_through_its_class_and_back(text: str) -> None:
    body = json.loads(text.replace('"worker_session":X', '"worker_session":"s"').replace(":X", ":7"))
    body.pop("sent_at_ms", None)  # stamped by the adapter, beside the fields
    for m in body.get("messages", ()):
        m.pop("sent_at_ms")
    assert _parse(body).to_dict() == body


def test_older_shapes_still_parse() -> None:
    """Bodies written by earlier versions or by hand: a result carrying both keys (the simulator's),
    a dispatch with no optional keys, a `resent` that is not the decider's mark, a fire with no id."""
    result = message_from_dict({"kind": "result", "execution_id": "e", "id": "result:t", "unit": "u",
                                "token": "t", "output": 3, "error": None})
    assert result == ResultMessage("e", "result:t", "u", "t", 3)
    d = task_message_from_dict({"kind": "dispatch_task", "execution_id": "e", "unit": "u", "task": "t",
                                "queue": "q", "input": None, "attempt": 1, "token": "k",
                                "idempotency_key": "e:u", "resent": "yes", "waiting_for_worker": True})
    assert isinstance(d, TaskDispatch) and d.resent is None and d.waiting_for_worker is None
    assert "resent" not in d.to_dict() and "heartbeat_timeout_ms" not in d.to_dict()
    fire = ScheduleFire.from_dict({"kind": "schedule_fire", "execution_id": "schedule:s", "schedule_id": "s"})
    assert (fire.id, fire.schedule_id, fire.fire_at_ms) == ("", "s", None)


def test_a_bad_body_is_refused_with_what_is_wrong() -> None:
    with pytest.raises(ValidationError, match="dispatch_task/cancel_task, not 'start'"):
        task_message_from_dict({"kind": "start"})
    with pytest.raises(ValidationError, match="cancel_task"):
        task_message_from_dict({"kind": "cancel_task", "token": "t"})  # no execution, unit, queue
    with pytest.raises(ValidationError, match="non-empty list"):
        Bundle.from_dict({"kind": "bundle", "execution_id": "e", "id": "b", "messages": []})
    with pytest.raises(ValidationError, match="fire_at_ms"):
        ScheduleFire.from_dict({"kind": "schedule_fire", "schedule_id": "s", "fire_at_ms": "soon"})


# ------------------------------------------------------------------------------------ the scan
SENDS = {"send_decision", "send_decisions", "send_task", "send", "_send", "_answer", "arm"}
KINDS = {*MESSAGE_TYPES, Bundle.KIND, ScheduleFire.KIND, TaskDispatch.KIND, TaskCancel.KIND}


def hand_built(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of each queue body built by hand: a dict literal with a `kind` key and either an
    `execution_id` key or a message kind as its value next to an `id` or `token`, or a dict literal,
    `dict(...)` or comprehension passed straight to a send."""
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Dict):
            keys = {k.value: v for k, v in zip(n.keys, n.values, strict=True) if isinstance(k, ast.Constant)}
            kind = keys.get("kind")
            if kind is not None and ("execution_id" in keys or (
                    isinstance(kind, ast.Constant) and kind.value in KINDS and {"id", "token"} & set(keys))):
                found.append((n.lineno, "a dict literal with a message's keys"))
        elif isinstance(n, ast.Call):
            name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)
            if name in SENDS:
                for a in [*n.args, *(k.value for k in n.keywords)]:
                    if isinstance(a, ast.Dict | ast.DictComp) or (
                            isinstance(a, ast.Call) and getattr(a.func, "id", None) == "dict"):
                        found.append((n.lineno, f"a dict built in the call to {name}"))
    return found


def test_no_module_builds_a_queue_body_by_hand() -> None:
    files = sorted((ROOT / "layers/orbit/orbit").rglob("*.py")) + sorted((ROOT / "functions").rglob("*.py"))
    assert len(files) > 200
    found = [f"{p.relative_to(ROOT)}:{line}: {what}" for p in files
             for line, what in hand_built(ast.parse(p.read_text(), str(p)))]
    assert found == [], "build queue bodies from their class (core/history/messages.py):\n" + "\n".join(found)


@pytest.mark.parametrize("code", [
    'queues.send_decision({"kind": kind, "execution_id": eid, "id": mid, "reason": reason})',
    'send(d.queue, {**body, "waiting_for_worker": n + 1}, delay)',
    'self.queues.send_task(e.queue, {**e.to_dict(), **trace})',
    'msg = {"kind": "started", "id": f"started:{t}"}',
    'self._send(dict(kind="heartbeat"))',
])
def test_the_scan_finds_a_body_built_by_hand(code: str) -> None:
    assert hand_built(ast.parse(code))
