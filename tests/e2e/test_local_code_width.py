"""A wide code `ctx.map` end to end on the local stack (issue 27, section 2): 300 branches, each a
step then an hour's sleep, and the same width as a DSL `for`. Completion and correctness, not time
(`benchmarks/bench_branches.py --e2e` prints the times, at 10,000)."""

from __future__ import annotations

import threading
from pathlib import Path

import orbit
from orbit.local import LocalStack

WORKERS = str(Path(__file__).resolve().parent / "fixtures" / "branch_workers.py")
N = 300


@orbit.workflow("e2e-width-map")
def wide(ctx, items):
    def one(c, item):
        out = c.step("br.echo", {"i": item})
        c.sleep("1h")
        return out["i"] * 2

    return ctx.map(items, one)


def test_a_300_branch_map_completes_in_order_with_each_step_once_and_no_thread_per_branch() -> None:
    with LocalStack(mode="inprocess", workers=[WORKERS]) as st:
        st.register(wide)
        st.register({"orbit": 1, "name": "e2e-width-for", "version": "1",
                     "steps": {"each": {"for": "{% input.items %}", "task": "br.echo",
                                        "input": "{% item %}"}},
                     "output": "{% steps.each.output %}"})
        before = threading.active_count()
        eid = st.start("e2e-width-map", list(range(N)))
        st.run_until_idle()  # every branch asleep
        assert threading.active_count() <= before + 2  # no thread per parked branch
        asleep = [k for k, s in st.describe(eid)["steps"].items() if k.endswith("sleep()")]
        assert len(asleep) == N
        st.advance(3600 + 5)
        desc = st.run_until_done(eid, wall_timeout_s=600)
        assert desc["status"] == "COMPLETED", desc.get("error")
        assert desc["output"] == [2 * i for i in range(N)]
        ran = [e["step"] for e in st.history(eid)
               if e["type"] == "StepSucceeded" and e["step"].endswith("br.echo")]
        assert len(ran) == N and len(set(ran)) == N  # every branch's step succeeded exactly once

        fid = st.start("e2e-width-for", {"items": list(range(N))})
        done = st.run_until_done(fid, wall_timeout_s=600)
        assert done["status"] == "COMPLETED" and done["output"] == list(range(N))
