"""One chaos seed: a world built (chaos_world.py), run until quiet, and the invariants checked.

`run_seed` builds the world of one seed on a fresh moto account and runs it; `check` states what must
hold once it is quiet: every execution at its exact expected end, in time; histories contiguous with
one terminal event; no unit succeeded twice; each signal received and consumed once; side effects at
most once per recorded attempt beyond the documented at-least-once re-runs (`_reruns`); no DLQ
message, nothing left on a queue, no flow-control slot held. `parse_seeds` reads `1-100,7`.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from typing import Any

import chaos_durable
import chaos_triggers as T
import chaos_workloads as W
from chaos_timers import DELAYS, LEAD_S
from chaos_world import (
    LATE_MS,
    START_MS,
    TERMINAL,
    THROTTLE,
    Clients,
    Env,
    Profile,
    Result,
    Stuck,
    World,
    kinds,
)

# isort: split
from aws_resources import create_stack  # tests/integration: on sys.path once chaos_world is imported
from moto import mock_aws
from orbit.aws import wiring as aws


# ------------------------------------------------------------------------------------ the checks
def check(world: World) -> list[str]:
    """The invariants once the world is quiet, as a list of what is wrong (empty: all hold)."""
    engine = Env("check", world).services.engine  # cold: everything read from the table
    problems: list[str] = T.check(world, engine, lambda eid, events: _trigger_history(world, eid, events)) \
        if world.profile.triggers else []
    runs: Counter[tuple[str, int | None]] = Counter((r.key, r.attempt) for r in W.LEDGER)
    for ex in world.executions:
        wl = ex.workload
        if wl.durable:
            problems += chaos_durable.check(world, ex)
            continue
        try:
            desc = engine.describe(ex.id)
        except Exception as e:  # noqa: BLE001 - an execution whose start never landed
            problems.append(f"{ex.id}: cannot be described ({type(e).__name__}: {e})")
            continue
        if desc["status"] != "COMPLETED" or desc.get("output") != wl.output:
            problems.append(f"{ex.id}: ended {desc['status']} with output {desc.get('output')!r} "
                            f"(error {desc.get('error')!r}); expected COMPLETED with {wl.output!r}")
        took = (desc.get("finished_at_ms") or world.clock.now) - (desc.get("created_at_ms") or START_MS)
        if took > LATE_MS:
            problems.append(f"{ex.id}: took {took / 3_600_000:.1f} h of virtual time "
                            f"(over {LATE_MS // 3_600_000} h: it waited for a timer it should not have, "
                            "e.g. a re-armed wait timeout)")
        events = engine.history(ex.id)
        ids = [ex.id] + sorted({e["child_id"] for e in events if e["type"] == "ChildStarted"})
        if len(ids) - 1 != wl.children:
            problems.append(f"{ex.id}: started {len(ids) - 1} children, expected {wl.children}")
        for eid in ids:
            hist = events if eid == ex.id else engine.history(eid)
            problems += _check_history(eid, hist, wl, runs, world)
    for q, dead in world.dead.items():
        if dead:
            problems.append(f"{len(dead)} message(s) in the DLQ of {q}: "
                            + ", ".join(f"{m.mid}:{kinds(m.body)}" for m in dead[:5]))
    sqs = world.clients.sqs
    for q, url in world.stack.queues.items():
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages",
                                                                       "ApproximateNumberOfMessagesDelayed"])
        n = sum(int(v) for v in attrs["Attributes"].values())
        if n:
            problems.append(f"{n} message(s) left on moto's {q} (sent with a delay, or to a DLQ)")
    from orbit.adapters.dynamodb.limits import DynamoLimits

    for c in DynamoLimits(world.clients.dynamodb, world.stack.table).list_counters():
        if c.holders or c.waiting_total or c.granted:  # flow control: slots lost
            problems.append(f"slots lost on {c.scope}: held by {sorted(c.holders)}, "
                            f"{c.waiting_total} waiting, {len(c.granted)} granted tickets kept")
    left = [m for q in world.queues.values() for m in q]
    if left:
        problems.append(f"{len(left)} message(s) still queued: {[kinds(m.body) for m in left[:5]]}")
    return problems


def _check_history(eid: str, events: list[dict[str, Any]], wl: W.Workload,
                   runs: Counter[tuple[str, int | None]], world: World, signals: bool = True) -> list[str]:
    out = []
    seqs = [e["seq"] for e in events]
    if seqs != list(range(1, len(seqs) + 1)):
        out.append(f"{eid}: history seqs are not 1..{len(seqs)}")
    ends = [e["type"] for e in events if e["type"] in TERMINAL]
    if len(ends) != 1 or not events or events[-1]["type"] not in TERMINAL:
        out.append(f"{eid}: terminal events {ends}, last event {events[-1]['type'] if events else None}")
    succeeded = Counter(e["step"] for e in events if e["type"] == "StepSucceeded")
    twice = {u: n for u, n in succeeded.items() if n > 1}
    if twice:
        out.append(f"{eid}: units succeeded more than once: {twice}")
    def sid(e: dict[str, Any]) -> str:  # the API keeps the client's id as `signal:<id>`
        return str(e.get("signal_id") or e["name"]).removeprefix("signal:")

    received = Counter(sid(e) for e in events if e["type"] == "SignalReceived")
    consumed = Counter(sid(e) for e in events if e["type"] == "SignalConsumed")
    if eid.count("/") == 0 and signals:
        expected = Counter(f"batch:bulk-{eid}" if wl.by_batch else f"{eid}:{s}" for s, _ in wl.signals)
        if received != expected or consumed != expected:
            out.append(f"{eid}: signals received {dict(received)}, consumed {dict(consumed)}; "
                       f"expected each of {sorted(expected)} once")
    # Side effects: a recorded attempt runs at most once, except a re-run after an invocation that
    # ran it and then failed before its outcome was durable (at-least-once, docs/inline-steps.md,
    # docs/workers.md); at_most_once units never re-run an attempt.
    attempts: dict[str, int] = {}
    for e in events:
        if e["type"] in ("StepScheduled", "StepDispatched", "StepAttemptFailed", "StepAttemptUncertain") \
                and e.get("attempt"):
            attempts[e["step"]] = max(attempts.get(e["step"], 0), int(e["attempt"]))
    for unit, n_attempts in attempts.items():
        key = f"{eid}:{unit}"
        label = unit.rsplit(".", 1)[-1]
        strict = unit in wl.at_most_once or label in wl.at_most_once
        ran = [(a, n) for (k, a), n in runs.items() if k == key]
        if label in ("first", "once") and eid.count("/") == 0:  # ctx.run: counted by label
            total = runs.get((f"run:{eid}:{label}", None), 0)
            allowed = n_attempts + (0 if strict else _reruns(f"run:{eid}:{label}", world))
            if total > allowed:
                out.append(f"{eid}: ctx.run {label!r} ran {total} times for {n_attempts} recorded "
                           f"attempt(s) ({allowed} allowed)")
            continue
        for attempt, n in ran:
            allowed = 1 + (0 if strict else _reruns(key, world, attempt) + world.spurious[(key, attempt)])
            if n > allowed:
                out.append(f"{eid}: {unit} attempt {attempt} ran {n} times ({allowed} allowed"
                           f"{', at_most_once' if strict else ''})")
    return out


def _trigger_history(world: World, eid: str, events: list[dict[str, Any]]) -> list[str]:
    """`_check_history` for a triggered execution (its signals are checked by chaos_triggers)."""
    runs: Counter[tuple[str, int | None]] = Counter((r.key, r.attempt) for r in W.LEDGER)
    return _check_history(eid, events, T.workload(eid.split("-")[0]), runs, world, signals=False)


def _reruns(key: str, world: World, attempt: int | None = None) -> int:
    """Runs of `key` in an invocation that then failed (a throttled call after the run, or the
    invocation raised): its outcome may never have been recorded, so one more run is allowed."""
    return sum(1 for i, r in enumerate(W.LEDGER) if r.key == key and r.attempt == attempt
               and world.failed_after.get(r.invocation, -1) > i)


# ------------------------------------------------------------------------------------ one seed
CLIENTS: list[Clients] = []


def run_seed(seed: int, profile: Profile | None = None) -> Result:
    from orbit.workflow import REGISTRY

    profile = profile or Profile()
    if not CLIENTS:
        CLIENTS.append(Clients())
    clients = CLIENTS[0]
    THROTTLE.attach(clients.dynamodb, clients.sqs, clients.s3, clients.secretsmanager)
    started = time.perf_counter()
    saved_env = dict(os.environ)
    held = REGISTRY.all()
    W.LEDGER.clear()
    world: World | None = None
    problems: list[str] = []
    with mock_aws():
        stack = create_stack(clients.dynamodb, clients.sqs, clients.s3)
        timers = {"ORBIT_TIMERS": "sqs-delay", "ORBIT_TIMER_LEAD_S": str(LEAD_S)} if profile.on_the_second \
            else {"ORBIT_TIMERS": "table"}
        os.environ.update({**stack.env(), **timers, "ORBIT_INLINE_MODULES": "chaos_workloads",
                           "ORBIT_DURABLE_PREFIX": chaos_durable.PREFIX,
                           "ORBIT_DURABLE_ANSWER_QUEUE_ARN": stack.arns["DurableAnswerQueue"]})
        if profile.holds_delays:
            DELAYS.by_body.clear()
            DELAYS.attach(clients.sqs)
        REGISTRY.replace([*held, *W.CODE.values()])
        try:
            world = World(seed, clients, stack, profile)
            THROTTLE.world = world
            W.TRACE[:] = [world.trace]
            logging.disable(logging.ERROR)  # throttled calls log thousands of lines; the trace says it
            try:
                world.run()
            except Stuck as e:
                problems.append(str(e))
            finally:
                logging.disable(logging.NOTSET)
            problems += check(world)
        finally:
            if profile.holds_delays:
                DELAYS.detach(clients.sqs)
            THROTTLE.world = None
            W.TRACE.clear()
            REGISTRY.replace(held)
            aws.reset()
            os.environ.clear()
            os.environ.update(saved_env)
    assert world is not None
    return Result(seed, problems, time.perf_counter() - started, world.invocations, world.throttled,
                  world.trace)


def parse_seeds(text: str) -> list[int]:
    """`1-100`, `7`, `1-10,42` -> the seeds."""
    out: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out
