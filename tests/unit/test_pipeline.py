"""One decision pipeline (issue 28, section 1): no stage calls back into a module already on the
stack, and every decision-queue body the service sends is its message class's `to_dict`."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

from orbit.core.history.messages import message_from_dict

from tests.unit.inline_world import World
from tests.unit.test_inline_steps import TASKS, chain

LAYERS = ("service/", "adapters/")
WORKER_KINDS = ("started", "result", "heartbeat")


def _module(frame: FrameType) -> str | None:
    f = frame.f_code.co_filename
    i = f.find("/orbit/orbit/")
    mod = f[i + len("/orbit/orbit/"):] if i >= 0 else ""
    return mod if mod.startswith(LAYERS) else None


def _world() -> tuple[World, list[dict[str, Any]]]:
    w = World(TASKS)
    d = chain(2)
    d["steps"]["w"] = {"task": "t.add", "input": {"v": "{% steps.s1.output.v %}"}}  # a worker step after
    d["output"] = "{% steps.w.output.v %}"
    w.register(d)
    sent: list[dict[str, Any]] = []
    real = w.queues.send_decision

    def send(message: Any, delay_s: int = 0) -> None:
        sent.append(dict(message))
        real(message, delay_s)

    w.queues.send_decision = send  # type: ignore[method-assign]
    return w, sent


def test_one_message_passes_the_stages_without_calling_back_into_a_module_on_the_stack() -> None:
    w, _ = _world()
    w.api.start("chain", None, {"v": 0}, "e1")  # the API hands the chain over to a decider
    batch = w.queues.receive_decisions(w.clock.now_ms())
    modules: list[str] = []
    back: set[tuple[str, str, str]] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        mod = _module(frame) if event == "call" else None
        if mod is None:
            return
        if not modules or modules[-1] != mod:
            modules.append(mod)
        below, f = [], frame.f_back
        while f is not None:
            m = _module(f)
            if m is not None:
                below.append(m)
            f = f.f_back
        if below and below[0] != mod and mod in below:
            back.add((below[0], mod, frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        failures = w.decider.handle_batch(batch, [1])
    finally:
        sys.setprofile(None)
    assert failures == []
    assert w.successes("e1") == {"s0": 1, "s1": 1}  # the chain ran in this pass, the worker step is queued
    assert back == set()  # e.g. inline -> engine._process, effects -> inline.carry_out under inline
    # 8 when the pipeline was made one (docs/decisions/pipeline-one-decision-pipeline.md), plus the
    # stages split out of engine.py and inline.py since (docs/decisions/engine-stage-modules.md):
    # intake, state_cache, deciding, committing, redelivery, turn.
    assert len(set(modules)) <= 14, ", ".join(sorted(set(modules)))


def test_every_decision_body_the_service_sends_is_built_from_its_message_class() -> None:
    w, sent = _world()
    w.api.start("chain", None, {"v": 0}, "e1")
    w.settle()
    w.api.start("chain", None, {"v": 0}, "e2")
    w.api.cancel("e2", "enough")
    w.settle()
    assert {b["kind"] for b in sent} >= {"wake", "cancel"}
    for body in sent:
        if body["kind"] in WORKER_KINDS:
            continue  # a worker's answer: orbit/worker/sdk.py builds it, not the service
        body = {k: v for k, v in body.items() if k not in ("sent_at_ms", "trace", "_redelivered")}
        assert message_from_dict(body).to_dict() == body
