"""A race's losing step is told to stop, end to end on the local stack.

The timer wins in the decision that dispatches the step, so the worker queue carries the
dispatch and the cancel together. The worker records the cancel request for the attempt's token
in its idempotency store, which is what its heartbeat reads (`ctx.cancelled`). The local pump
runs one batch at a time, so a task cannot watch its heartbeat while the decider runs; the
simulator test (tests/unit/test_code_branches.py) shows the cancel message reaching the worker
while the task is in flight.
"""

from __future__ import annotations

from pathlib import Path

import orbit
from orbit.local import LocalStack

WORKERS = str(Path(__file__).resolve().parent / "fixtures" / "branch_workers.py")


@orbit.workflow("e2e-br-race-step")
def race_step(ctx, input):
    return list(ctx.race(work=lambda c: c.step("br.slow", input, heartbeat_timeout="3s"),
                         timer=lambda c: c.sleep("0s")))


def test_the_losing_steps_worker_is_told_to_stop(tmp_path):
    report = tmp_path / "report.json"
    with LocalStack(mode="inprocess", workers=[WORKERS]) as st:
        st.register(race_step)
        eid = st.start("e2e-br-race-step", {"report": str(report), "max_s": 1})
        desc = st.run_until_done(eid)
        st.run_until_idle()
        assert desc["output"] == ["timer", None]
        unit = "1.race()/work/1.br.slow"
        assert desc["steps"][unit]["status"] == "CANCELLED"
        history = st.history(eid)
        cancelled = next(e for e in history if e["type"] == "StepCancelled" and e["step"] == unit)
        assert "won by timer" in cancelled["reason"]
        tokens = st.engine.load_state(eid).units[unit].tokens
        assert tokens and all(st.services.idempotency.cancelled(t) for t in tokens)  # what a heartbeat reads
