"""The workloads the delivery-chaos harness runs: definitions, code workflows, their tasks and ends.

Every task counts its runs in LEDGER (which invocation ran which attempt of which unit), so the
checks can tell a second run of one recorded attempt from a documented at-least-once re-run.
Each workload knows its exact expected output and the signals the client sends it.

Covered: a chain of worker steps, a fan-out (`for` plus independent steps), a signal with a short
(2 min) and a long (20 min > SQS's 15 min DelaySeconds) sleep, a 16-minute sleep right after a
signal (the shape of finding 1), a child workflow, inline steps of both semantics around a worker
step and a signal; code workflows with branches (ctx.parallel: a step, a sleep then a step, a
signal wait) followed by a 16-minute sleep, and ctx.map of branches with ctx.run of both
semantics and a child.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orbit
from orbit import worker
from orbit.workflow import CodeRegistry


@dataclass
class Run:
    key: str  # the task's idempotency key (execution:unit), or `run:<execution>:<label>` for ctx.run
    attempt: int | None  # None: a ctx.run function (it is not told its attempt)
    invocation: int  # World's invocation counter when it ran


LEDGER: list[Run] = []
CURRENT = [0]  # the invocation in progress (set by the world before each handler call)
TRACE: list[list[str]] = []  # the world's trace, while one runs


def _record(run: Run) -> None:
    LEDGER.append(run)
    if TRACE:
        TRACE[0].append(f"    ran {run.key} attempt {run.attempt}")


def _ran(ctx: worker.TaskContext) -> None:
    _record(Run(ctx.idempotency_key, ctx.attempt, CURRENT[0]))


@worker.task("chaos.add")
def add(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    _ran(ctx)
    return {"v": int(input["v"]) + int(input.get("k", 1))}


# ---------------------------------------------------------------------------------------- DSL
def _add(v: str, k: int, **extra: Any) -> dict[str, Any]:
    return {"task": "chaos.add", "input": {"v": v, "k": k}, **extra}


CHILD = {"orbit": 1, "name": "chaos-child", "version": "1",
         "steps": {"a": _add("{% input.v %}", 1), "b": _add("{% steps.a.output.v %}", 2)},
         "output": "{% steps.b.output.v %}"}
CHAIN = {"orbit": 1, "name": "chaos-chain", "version": "1",
         "steps": {"a": _add("{% input.v %}", 1), "b": _add("{% steps.a.output.v %}", 10),
                   "c": _add("{% steps.b.output.v %}", 100)},
         "output": "{% steps.c.output.v %}"}
FANOUT = {"orbit": 1, "name": "chaos-fanout", "version": "1",
          "steps": {"each": {"for": "{% [1, 2, 3, 4] %}", "task": "chaos.add",
                             "input": {"v": "{% item %}", "k": 1}},
                    "p1": _add("{% input.v %}", 10), "p2": _add("{% input.v %}", 20),
                    "join": _add("{% steps.p1.output.v + steps.p2.output.v %}", 0, after=["each"])},
          "output": {"each": "{% steps.each.output.v %}", "join": "{% steps.join.output.v %}"}}
SLEEPS = {"orbit": 1, "name": "chaos-sleeps", "version": "1",
          "steps": {"short": {"sleep": "2m"}, "t1": _add("{% input.v %}", 1, after=["short"]),
                    "approve": {"wait_for": "approval"},
                    "long": {"sleep": "20m", "after": ["approve", "t1"]},
                    "t2": _add("{% steps.t1.output.v + steps.approve.output.n %}", 1, after=["long"])},
          "output": {"v": "{% steps.t2.output.v %}", "by": "{% steps.approve.output.by %}"},
          "signals": {"approval": {"schema": {"type": "object", "required": ["by"]}}}}
# Finding 1's shape: a step (its result decided by one environment, which caches the state), a
# signal, then a sleep past SQS's 15 minutes, then a step.
SIGNAL_SLEEP = {"orbit": 1, "name": "chaos-signal-sleep", "version": "1",
                "steps": {"first": _add("{% input.v %}", 1),
                          "go": {"wait_for": "go", "after": ["first"]},
                          "nap": {"sleep": "16m", "after": ["go"]},
                          "done": _add("{% steps.first.output.v + steps.go.output.n %}", 1, after=["nap"])},
                "output": "{% steps.done.output.v %}"}
PARENT = {"orbit": 1, "name": "chaos-parent", "version": "1",
          "steps": {"first": _add("{% input.v %}", 1),
                    "kid": {"workflow": "chaos-child", "input": {"v": "{% steps.first.output.v %}"}},
                    "last": _add("{% steps.kid.output %}", 1000)},
          "output": "{% steps.last.output.v %}"}
INLINE = {"orbit": 1, "name": "chaos-inline", "version": "1",
          "steps": {"a": _add("{% input.v %}", 1, inline=True),
                    "b": _add("{% steps.a.output.v %}", 2, inline=True, semantics="at_most_once",
                              retry={"max_attempts": 4, "backoff": "1s"}),
                    "w": _add("{% steps.b.output.v %}", 3),
                    "go": {"wait_for": "go"},
                    "c": _add("{% steps.w.output.v + steps.go.output.n %}", 4, inline=True,
                              semantics="at_most_once", retry={"max_attempts": 4, "backoff": "1s"}),
                    "d": _add("{% steps.c.output.v %}", 5, inline=True)},
          "output": "{% steps.d.output.v %}"}

# Flow control (docs/flow-control.md): one running per tenant, at most 2 attempts of the fan-out's
# task at once; the check finds no slot held and nobody waiting once the world is quiet.
LIMITED = {"orbit": 1, "name": "chaos-limited", "version": "1",
           "concurrency": {"limit": 1, "key": "{% input.tenant %}"},
           "tasks": {"chaos.add": {"concurrency": {"limit": 2}}},
           "steps": {"each": {"for": "{% [1, 2, 3, 4] %}", "task": "chaos.add",
                              "input": {"v": "{% item %}", "k": 1}},
                     "sum": _add("{% $sum(steps.each.output.v) %}", 0, after=["each"])},
           "output": "{% steps.sum.output.v %}"}


# ------------------------------------------------------------------------------ code workflows
def note(key: str, value: int) -> int:
    """A ctx.run function: counts its runs by `key` (execution and label)."""
    _record(Run(key, None, CURRENT[0]))
    return value + 1


def branches(ctx: Any, input: Any) -> Any:
    a, b, go = ctx.parallel(lambda c: c.step("chaos.add", {"v": input["v"], "k": 1}),
                            lambda c: (c.sleep("1m"), c.step("chaos.add", {"v": 1, "k": 1}))[1],
                            lambda c: c.wait_for("go"))
    ctx.sleep("16m")
    z = ctx.step("chaos.add", {"v": a["v"] + b["v"] + go["n"], "k": 1}, name="after")
    return {"a": a["v"], "b": b["v"], "z": z["v"]}


def _item(c: Any, item: Any) -> Any:
    return c.step("chaos.add", {"v": item, "k": 100})["v"]


def mapping(ctx: Any, input: Any) -> Any:
    eid = ctx.execution_id
    first = ctx.run(note, f"run:{eid}:first", input["v"], name="first")
    items = ctx.map([1, 2, 3], _item)
    once = ctx.run(note, f"run:{eid}:once", first, name="once", semantics="at_most_once",
                   retry={"max_attempts": 4, "backoff": "1s"})
    kid = ctx.child("chaos-child", {"v": once})
    ctx.sleep("2m")
    return {"first": first, "items": items, "once": once, "kid": kid}


CODE = {fn.__name__: orbit.workflow(f"chaos-code-{fn.__name__}", registry=CodeRegistry())(fn)
        for fn in (branches, mapping)}


# ------------------------------------------------------------------------------------ workloads
@dataclass(frozen=True)
class Workload:
    name: str
    workflow: str
    input: Any
    output: Any
    signals: tuple[tuple[str, Any], ...] = ()
    children: int = 0  # how many child executions it starts
    # units whose attempts must never run twice (at_most_once inline steps / ctx.run labels)
    at_most_once: tuple[str, ...] = field(default_factory=tuple)
    # its one signal is sent by a bulk action (`POST /batches`, id `bulk-<execution>`), not directly
    by_batch: bool = False
    durable: bool = False  # a durable function on the AWS path (chaos_durable.py), not a workflow


WORKLOADS = {w.name: w for w in (
    Workload("chain", "chaos-chain", {"v": 1}, 112),
    Workload("fanout", "chaos-fanout", {"v": 1}, {"each": [2, 3, 4, 5], "join": 32}),
    Workload("sleeps", "chaos-sleeps", {"v": 1}, {"v": 10, "by": "ops"},
             signals=(("approval", {"by": "ops", "n": 7}),)),
    Workload("signal-sleep", "chaos-signal-sleep", {"v": 1}, 8, signals=(("go", {"n": 5}),)),
    Workload("child", "chaos-parent", {"v": 1}, 1005, children=1),
    Workload("inline", "chaos-inline", {"v": 1}, 26, signals=(("go", {"n": 10}),),
             at_most_once=("b", "c")),
    Workload("limited", "chaos-limited", {"v": 1, "tenant": "acme"}, 14),
    Workload("code-branches", "chaos-code-branches", {"v": 1}, {"a": 2, "b": 2, "z": 8},
             signals=(("go", {"n": 3}),)),
    Workload("code-mapping", "chaos-code-mapping", {"v": 1},
             {"first": 2, "items": [101, 102, 103], "once": 3, "kid": 6}, children=1,
             at_most_once=("once",)),
)}
# Drawn only by a profile that names them (test_bulk_actions_under_chaos): the default draw, and so
# every existing seed, stays as it was.
EXTRA = {w.name: w for w in (
    Workload("bulk-signal", "chaos-signal-sleep", {"v": 1}, 8, signals=(("go", {"n": 5}),), by_batch=True),
    Workload("durable", "orbit-chaos-durable-three", {"v": 1}, "abc", durable=True),
)}
DEFINITIONS = (CHILD, CHAIN, FANOUT, SLEEPS, SIGNAL_SLEEP, PARENT, INLINE, LIMITED)
