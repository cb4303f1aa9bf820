"""Triggers under delivery chaos (issue 30, docs/triggers.md): events in through the real triggers
function, with the world's duplicates, reordering, lost deletes, throttling and two environments.

A profile with `triggers=(...)` adds the stack's `TriggerQueue` (what a trigger's EventBridge rule
sends to: the rule's input transformer's `{orbit_trigger, event}`) and a queue of the user's that an
sqs trigger names, both read by two `triggers` environments; the buffers' checks (delayed messages
on `TriggerQueue`) are held by the model (chaos_timers.Delays). The feed emits each workload's
events at their virtual times; EventBridge's own at-least-once delivery is modelled by emitting
some events twice (the same event id, a new SQS message), on top of the world's faults.

Workloads (their invariants in `check`):
- `trig-eb`: an EventBridge trigger with an `id` expression; one more event gives a taken id with
  another input. One execution per id, each started once, its output from its own input.
- `trig-sqs`: an sqs trigger, four jobs and a poison message (its `input` expression fails). One
  execution per job; the poison message lands in `TriggerDLQ` (copies of that one letter only) and
  starts nothing; no other letter.
- `trig-sws`: signal-with-start, a burst of four events for one id through a trigger, and four
  `POST /executions/{id}/signal-with-start` calls for another id. One execution each, every signal
  received and consumed once, consumed in the order received; the API's in the order called.
- `trig-debounce`: debounce by key (30 s, max_wait 2 m). Every event counted once in its key's
  buffer; nothing left pending; one execution per flushed generation (`{id}-{n}`, n = 1..), whose
  input is the last event of its generation.
- `trig-batch`: batches by key (max_size 3, max_wait 1 m). Every event in exactly one batch, each
  batch's input its events in arrival order, at most 3, one execution per batch.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import chaos_workloads as W

USER_QUEUE = "orbit-trigger-chaos-jobs"  # the queue an sqs trigger names (the function's prefix)
USER_MAX_RECEIVES = 5
SWS_SIGNALS = 4


def _add(v: str, k: int) -> dict[str, Any]:
    return {"task": "chaos.add", "input": {"v": v, "k": k}}


def _eb(detail_type: str) -> dict[str, Any]:
    return {"pattern": {"source": ["chaos"], "detail-type": [detail_type]}}


def definitions(user_queue_arn: str) -> tuple[dict[str, Any], ...]:
    one_step = {"steps": {"a": _add("{% input.v %}", 1)}, "output": "{% steps.a.output.v %}"}
    waits = {f"w{i}": {"wait_for": "item", **({"after": [f"w{i - 1}"]} if i > 1 else {})}
             for i in range(1, SWS_SIGNALS + 1)}
    return (
        {"orbit": 1, "name": "chaos-trig-eb", "version": "1", **one_step,
         "triggers": {"placed": {"eventbridge": _eb("OrderPlaced"), "id": "{% 'eb-' & detail.order %}",
                                 "input": "{% {'v': detail.v} %}"}}},
        {"orbit": 1, "name": "chaos-trig-sqs", "version": "1", **one_step,
         "triggers": {"jobs": {"sqs": {"queue_arn": user_queue_arn}, "id": "{% 'sq-' & body.id %}",
                               "input": "{% {'v': $number(body.n)} %}"}}},
        {"orbit": 1, "name": "chaos-trig-sws", "version": "1", "signals": {"item": {}},
         "steps": waits, "output": "{% [" + ", ".join(f"steps.{w}.output" for w in waits) + "] %}",
         "triggers": {"item": {"eventbridge": _eb("ItemAdded"), "id": "{% 'sws-' & detail.order %}",
                               "input": "{% {'order': detail.order} %}",
                               "signal": {"name": "item", "payload": "{% detail.n %}"}}}},
        {"orbit": 1, "name": "chaos-trig-debounce", "version": "1", **one_step,
         "triggers": {"typing": {"eventbridge": _eb("Typing"), "id": "{% 'db-' & detail.doc %}",
                                 "input": "{% {'v': detail.v} %}",
                                 "debounce": {"key": "{% detail.doc %}", "period": "30s",
                                              "max_wait": "2m"}}}},
        {"orbit": 1, "name": "chaos-trig-batch", "version": "1",
         "steps": {"a": _add("{% $sum(input) %}", 0)}, "output": "{% steps.a.output.v %}",
         "triggers": {"clicks": {"eventbridge": _eb("Clicked"), "id": "{% 'bt-' & detail.page %}",
                                 "input": "{% detail.v %}",
                                 "batch": {"key": "{% detail.page %}", "max_size": 3, "max_wait": "1m"}}}},
    )


WORKLOADS = ("trig-eb", "trig-sqs", "trig-sws", "trig-debounce", "trig-batch")
WORKFLOW = {w: f"chaos-{w}" for w in WORKLOADS}


@dataclass
class Event:
    at_ms: int  # virtual time (from the world's start) it is emitted
    queue: str  # "TriggerQueue", USER_QUEUE, or "api" (a signal-with-start call)
    body: Any
    key: str  # the event's own id (EventBridge) / the job's id (SQS) / the call's signal id


@dataclass
class Feed:
    """The events the seed's trigger workloads emit, in time order; `sent`: what went out."""

    events: list[Event] = field(default_factory=list)
    sent: list[Event] = field(default_factory=list)
    api_calls: list[tuple[str, int]] = field(default_factory=list)  # (execution, payload) accepted

    def due(self, now_rel: int) -> Event | None:
        return self.events[0] if self.events and self.events[0].at_ms <= now_rel else None

    def next_ms(self) -> int | None:
        return self.events[0].at_ms if self.events else None


def _wrapped(workflow: str, trigger: str, evid: str, kind: str, detail: dict[str, Any]) -> dict[str, Any]:
    """What a trigger's rule puts on TriggerQueue (its input transformer's output)."""
    return {"orbit_trigger": {"workflow": workflow, "trigger": trigger},
            "event": {"version": "0", "id": evid, "source": "chaos", "detail-type": kind,
                      "account": "123456789012", "region": "us-east-1", "time": "2026-01-01T00:00:00Z",
                      "resources": [], "detail": detail}}


def build_feed(seed: int, rng: Any, names: tuple[str, ...]) -> Feed:
    """The events of the workloads `names`, with EventBridge's duplicate deliveries drawn from `rng`."""
    out: list[Event] = []

    def bus(at: int, workflow: str, trigger: str, evid: str, kind: str, detail: dict[str, Any]) -> None:
        body = _wrapped(workflow, trigger, evid, kind, detail)
        out.append(Event(at, "TriggerQueue", body, evid))
        if rng.random() < 0.3:  # EventBridge delivered it twice (same event id, another message)
            out.append(Event(at + rng.randint(0, 90_000), "TriggerQueue", body, evid))

    for name in names:
        if name == "trig-eb":
            for i in range(4):
                bus(rng.randint(0, 60_000), "chaos-trig-eb", "placed", f"eb-ev-{seed}-{i}", "OrderPlaced",
                    {"order": f"{seed}-{i}", "v": 10 * (i + 1)})
            # another event (its own id) naming an order already named, with another input: exists
            bus(rng.randint(0, 60_000), "chaos-trig-eb", "placed", f"eb-ev-{seed}-x", "OrderPlaced",
                {"order": f"{seed}-0", "v": 999})
        elif name == "trig-sqs":
            jobs = [{"id": f"{seed}-{i}", "n": str(5 * (i + 1))} for i in range(4)]
            jobs.append({"id": f"{seed}-poison", "n": "not a number"})
            for job in jobs:
                out.append(Event(rng.randint(0, 60_000), USER_QUEUE, job, job["id"]))
        elif name == "trig-sws":
            start = rng.randint(0, 30_000)
            for n in range(1, SWS_SIGNALS + 1):  # a burst: all within two seconds
                bus(start + rng.randint(0, 2_000), "chaos-trig-sws", "item", f"sws-ev-{seed}-{n}",
                    "ItemAdded", {"order": f"{seed}", "n": n})
            for n in range(1, SWS_SIGNALS + 1):  # the API's calls, in this order
                out.append(Event(start + 500 * n, "api", {"n": n}, f"api-{seed}-{n}"))
        elif name == "trig-debounce":
            for doc in ("d1", "d2"):
                at = rng.randint(0, 20_000)
                for i in range(5):
                    at += rng.choice((5_000, 10_000, 45_000, 100_000))  # some gaps pass the period
                    bus(at, "chaos-trig-debounce", "typing", f"db-ev-{seed}-{doc}-{i}", "Typing",
                        {"doc": f"{seed}-{doc}", "v": 100 * (1 + int(doc[1])) + i})
        elif name == "trig-batch":
            for page, count in (("p1", 7), ("p2", 2)):
                at = rng.randint(0, 20_000)
                for i in range(count):
                    at += rng.choice((1_000, 5_000, 70_000))
                    bus(at, "chaos-trig-batch", "clicks", f"bt-ev-{seed}-{page}-{i}", "Clicked",
                        {"page": f"{seed}-{page}", "v": 1000 * int(page[1]) + i})
    out.sort(key=lambda e: e.at_ms)
    return Feed(out)


def api_signal_with_start(world: Any, ev: Event) -> bool:
    """One `POST /executions/{id}/signal-with-start`; False when it must be retried (a 5xx)."""
    eid = f"swsapi-{world.seed}"
    status, got = world.api("POST", f"/executions/{eid}/signal-with-start",
                            {"workflow": "chaos-trig-sws", "signal": "item", "payload": ev.body["n"],
                             "input": {"order": "api"}, "signal_id": ev.key})
    world.trace.append(f"t+{world.rel()}s signal-with-start {eid} {ev.key}: {status}")
    if status in (200, 202):
        world.feed.api_calls.append((eid, ev.body["n"]))
        return True
    if status < 500:
        raise AssertionError(f"signal-with-start {ev.key}: {status} {got}")
    return False


# ------------------------------------------------------------------------------------ the checks
def check(world: Any, engine: Any, history_problems: Any) -> list[str]:
    """The triggers' invariants once the world is quiet (drains TriggerDLQ: its letters are checked here)."""
    from orbit.adapters.dynamodb.trigger_buffers import DynamoTriggerBuffers
    from orbit.service.trigger_buffers import buffer_id

    sent = world.feed.sent
    names = set(world.profile.triggers)
    problems: list[str] = []
    letters = _drain_dlq(world)
    by_workflow: dict[str, list[str]] = {}
    for wf in (f"chaos-{w}" for w in WORKLOADS):
        by_workflow[wf] = sorted(e.execution_id for e in _all(engine, wf))

    def ended(eid: str, output: Any) -> None:
        desc = engine.describe(eid)
        if desc["status"] != "COMPLETED" or desc.get("output") != output:
            problems.append(f"{eid}: ended {desc['status']} with {desc.get('output')!r} "
                            f"(error {desc.get('error')!r}); expected COMPLETED with {output!r}")
        problems.extend(history_problems(eid, engine.history(eid)))

    if "trig-eb" in names:
        want = sorted({f"eb-{e.body['event']['detail']['order']}" for e in sent
                       if e.body.get("orbit_trigger", {}).get("workflow") == "chaos-trig-eb"})
        if by_workflow["chaos-trig-eb"] != want:
            problems.append(f"trig-eb: executions {by_workflow['chaos-trig-eb']}, expected one per id {want}")
        for eid in by_workflow["chaos-trig-eb"]:
            ended(eid, int(engine.describe(eid)["input"]["v"]) + 1)
    if "trig-sqs" in names:
        # a job whose every delivery hit a fault went to the user queue's DLQ by SQS's contract
        # (the world notes it, excused): its execution may have started before a later fault, or not
        excused = {json.loads(m.body)["id"] for m in world.excused if m.queue == USER_QUEUE}
        jobs = [e.body for e in sent if e.queue == USER_QUEUE]
        want = sorted(f"sq-{j['id']}" for j in jobs if not j["id"].endswith("poison")
                      and (j["id"] not in excused or f"sq-{j['id']}" in by_workflow["chaos-trig-sqs"]))
        if by_workflow["chaos-trig-sqs"] != want:
            problems.append(f"trig-sqs: executions {by_workflow['chaos-trig-sqs']}, expected {want} "
                            "(the poison message starts nothing)")
        for j in jobs:
            if not j["id"].endswith("poison") and f"sq-{j['id']}" in by_workflow["chaos-trig-sqs"]:
                ended(f"sq-{j['id']}", int(j["n"]) + 1)
        poison = [x for x in letters if isinstance(x.get("event"), dict)
                  and x["event"].get("body", {}).get("id", "").endswith("poison")]
        if any(j["id"].endswith("poison") and j["id"] not in excused for j in jobs) and not poison:
            problems.append("trig-sqs: the poison message is not in TriggerDLQ")
        if any(x.get("trigger") != "jobs" or "$number" not in str(x.get("reason")) for x in poison):
            problems.append(f"trig-sqs: a poison letter without its trigger or reason: {poison[:2]}")
        letters = [x for x in letters if x not in poison]
    if "trig-sws" in names:
        problems += _check_sws(world, engine, by_workflow["chaos-trig-sws"], ended)
    buffers = DynamoTriggerBuffers(world.clients.dynamodb, world.stack.table)
    for name, wf, trigger, field_, per_gen in (
            ("trig-debounce", "chaos-trig-debounce", "typing", "doc", "last"),
            ("trig-batch", "chaos-trig-batch", "clicks", "page", "all")):
        if name not in names:
            continue
        events = [e for e in sent if e.body.get("orbit_trigger", {}).get("workflow") == wf]
        keys = sorted({e.body["event"]["detail"][field_] for e in events})
        expected_ids: list[str] = []
        for key in keys:
            value = {e.key: e.body["event"]["detail"]["v"] for e in events
                     if e.body["event"]["detail"][field_] == key}
            got = buffers.get(buffer_id(wf, trigger, key))
            if got is None:
                problems.append(f"{name}: no buffer for key {key!r}")
                continue
            state = got[0]
            seen = Counter(k for k, _ in state["seen"])
            if seen != Counter(list(value)):
                problems.append(f"{name} {key}: events counted {dict(seen)}; expected each of "
                                f"{sorted(value)} once")
            if state["first_ms"] is not None or state.get("closing"):
                problems.append(f"{name} {key}: events left in the buffer (never started): "
                                f"gen {state['gen']}, first_ms {state['first_ms']}, "
                                f"closing {state.get('closing')}")
            prefix = "db-" if name == "trig-debounce" else "bt-"
            for gen in range(1, state["gen"]):
                eid = f"{prefix}{key}-{gen}"
                expected_ids.append(eid)
                members = [value[k] for k, g in state["seen"] if g == gen and k in value]
                want_input = {"v": members[-1]} if per_gen == "last" and members else members
                if per_gen == "all" and not 1 <= len(members) <= 3:
                    problems.append(f"{name} {key}: generation {gen} holds {len(members)} events (1-3)")
                try:
                    got_input = engine.describe(eid)["input"]
                except Exception as e:  # noqa: BLE001 - a flushed generation that never started
                    problems.append(f"{name} {key}: generation {gen} was flushed but {eid} "
                                    f"cannot be described ({type(e).__name__})")
                    continue
                if got_input != want_input:
                    problems.append(f"{eid}: input {got_input!r}; its generation's events give "
                                    f"{want_input!r}")
                ended(eid, (sum(members) if per_gen == "all" else (members[-1] + 1 if members else None)))
        if by_workflow[wf] != sorted(expected_ids):
            problems.append(f"{name}: executions {by_workflow[wf]}, expected one per flushed "
                            f"generation {sorted(expected_ids)}")
    if letters:
        problems.append(f"{len(letters)} unexpected letter(s) in TriggerDLQ: "
                        + "; ".join(str(x.get("reason"))[:160] for x in letters[:3]))
    return problems


def _check_sws(world: Any, engine: Any, ids: list[str], ended: Any) -> list[str]:
    problems: list[str] = []
    by_trigger = f"sws-{world.seed}"
    by_api = f"swsapi-{world.seed}"
    bursts = {e.key for e in world.feed.sent if e.queue == "TriggerQueue"
              and e.body["orbit_trigger"]["workflow"] == "chaos-trig-sws"}
    calls = [n for eid, n in world.feed.api_calls if eid == by_api]
    want = sorted(([by_trigger] if bursts else []) + ([by_api] if calls else []))
    if ids != want:
        problems.append(f"trig-sws: executions {ids}, expected one per id {want}")
    for eid, expected in ((by_trigger, len(bursts)), (by_api, len(calls))):
        if eid not in ids:
            continue
        events = engine.history(eid)
        received = [(e.get("signal_id") or e["name"], e.get("payload")) for e in events
                    if e["type"] == "SignalReceived"]
        consumed = [e.get("signal_id") or e["name"] for e in events if e["type"] == "SignalConsumed"]
        rids = [r for r, _ in received]
        if len(set(rids)) != len(rids) or len(rids) != expected:
            problems.append(f"{eid}: {len(rids)} signals received ({len(set(rids))} distinct), "
                            f"expected {expected} once each")
        if consumed != rids:
            problems.append(f"{eid}: signals consumed {consumed}, not once each in the order received {rids}")
        payloads = [p for _, p in received]
        if eid == by_api and payloads != calls:
            problems.append(f"{eid}: signals received {payloads}, not in the order the calls were "
                            f"accepted {calls}")
        ended(eid, payloads)
    return problems


def _all(engine: Any, workflow: str) -> list[Any]:
    out, token = [], None
    while True:
        page, token = engine.list(workflow, limit=200, cursor=token)
        out += page
        if not token:
            return out


def _drain_dlq(world: Any) -> list[dict[str, Any]]:
    sqs, url = world.clients.sqs, world.stack.queues["TriggerDLQ"]
    out = []
    while True:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                  VisibilityTimeout=36_000).get("Messages", [])
        if not got:
            return out
        sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                                                        for i, m in enumerate(got)])
        out += [json.loads(m["Body"]) for m in got]


def workload(name: str) -> W.Workload:
    """What `_check_history` needs of a triggered execution: its side effects run once (no signals
    expected from the client: signal-with-start is checked by `_check_sws`)."""
    return W.Workload(name, "", None, None)
