"""Issue 25, item 6: the workflow author's code runs under a time bound on every thread, not only
on the main one (SIGALRM reaches the main thread only). Branch sec6; each case hung on main.

- A query handler that loops, asked through the API function's entry point (`handle_request`, no
  server runner: as on AWS), on the main thread and on another thread: a 400 USER_CODE_TIMEOUT
  naming the query within its bound (ORBIT_CODE_BUDGET_S), not the Lambda's timeout.
- A start whose code workflow loops before its first durable call: a 500 USER_CODE_TIMEOUT in one
  line naming the workflow and the line, nothing recorded (it was an exception out of the router).
- A code workflow that loops without a durable call in `orbit dev`'s decider (the pump's thread):
  the decision fails with the stall guard's error, and other executions go on meanwhile.
- Under `orbit dev`, a worker task that runs past its step's `timeout`: the timeout is recorded at
  the deadline while the task still runs, and other executions are decided meanwhile; its late
  result changes nothing.
- Under `orbit dev`, an inline step whose task runs for seconds: other executions are decided and
  requests answered meanwhile (the decider lets go of the engine lock while the task runs).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from tests.security.harness import ROOT, in_child, one_line_error

QUERY = """
import os, threading, time
os.environ["ORBIT_CODE_BUDGET_S"] = "1"
from tests.security.fixtures.sec_loops import spin_query

sim = world()
sim.register(spin_query)
call(sim, "POST", "/executions", {"workflow": "sec-spin-query", "id": "q1"})
sim.run()
"""


@pytest.mark.parametrize("where", ["main", "thread"])
def test_a_looping_query_handler_is_answered_with_a_timeout_within_its_bound(where: str) -> None:
    spin, ok, took = in_child(f"""
        def ask():
            t = time.monotonic()
            got = call(sim, "POST", "/executions/q1/queries/spin", {{}})
            return got, time.monotonic() - t
        if {where!r} == "main":
            spin, took = ask()
        else:
            box = {{}}
            th = threading.Thread(target=lambda: box.update(r=ask()))
            th.start(); th.join(15)
            spin, took = box["r"]
        emit([spin, call(sim, "POST", "/executions/q1/queries/ok", {{}}), took])
    """, f"a query handler that loops, on the {where} thread", timeout_s=20, setup=QUERY)
    assert spin[0] == 400 and spin[1]["error"]["code"] == "USER_CODE_TIMEOUT", spin
    assert one_line_error(spin[1]).startswith("query 'spin' of execution 'q1' ran past 1 s and was stopped")
    assert 1 <= took < 6, took
    assert ok == [200, {"result": "fine"}]


def _dev_child(code: str, why: str) -> Any:
    """Run a script that serves a DevServer in a fresh interpreter, with a time limit; what it
    printed after RESULT."""
    try:
        out = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, timeout=60,
                             cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail(why)
    lines = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
    assert lines, out.stdout[-2000:] + out.stderr[-3000:]
    return json.loads(lines[-1][7:])


@pytest.mark.parametrize("where", ["main", "thread"])
def test_a_start_whose_workflow_loops_is_answered_with_one_line_and_records_nothing(where: str) -> None:
    started, after = in_child(f"""
        from orbit.service.replay_host import default_runtime
        from orbit.service.stall import StallGuard
        from tests.security.fixtures.sec_loops import spin_at_start
        (sim.engine.code_runtime or default_runtime()).guard = StallGuard()  # as the AWS wiring does
        sim.register(spin_at_start)
        start = lambda: call(sim, "POST", "/executions", {{"workflow": "sec-spin-at-start", "id": "s1"}})
        if {where!r} == "main":
            started = start()
        else:
            box = {{}}
            th = threading.Thread(target=lambda: box.update(r=start()))
            th.start(); th.join(15)
            started = box["r"]
        emit([started, call(sim, "GET", "/executions/s1")])
    """, f"a start whose workflow loops, on the {where} thread", timeout_s=20, setup=QUERY)
    assert started[0] == 500 and started[1]["error"]["code"] == "USER_CODE_TIMEOUT", started
    assert one_line_error(started[1]).startswith(
        "POST /executions: workflow 'sec-spin-at-start' ran 1.")
    assert after[0] == 404, after


DEV = """
import os, sys, threading, time, json, urllib.request, urllib.error
os.environ["ORBIT_CODE_BUDGET_S"] = "1"
from orbit.local import LocalStack
from orbit.local.devserver import DevServer
from tests.security.fixtures.sec_loops import spin_after_go

QUICK = {"orbit": 1, "name": "quick", "version": "1", "steps": {"w": {"wait_for": "go"},
         "a": {"compute": "{% steps.w.output.n + 1 %}", "after": ["w"]}}}

def http(dev, method, path, body=None):
    req = urllib.request.Request(dev.url + path, data=None if body is None else json.dumps(body).encode(),
                                 method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")

def until(check, limit_s):
    deadline = time.monotonic() + limit_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
"""


def test_a_code_workflow_looping_in_orbit_devs_decider_is_stopped_and_others_go_on() -> None:
    code = textwrap.dedent(DEV) + textwrap.dedent("""
        with LocalStack(mode="inprocess") as stack:
            stack.register(QUICK)
            stack.register(spin_after_go)
            dev = DevServer(stack, port=0)
            threading.Thread(target=dev.serve_forever, daemon=True).start()
            http(dev, "POST", "/executions", {"workflow": "sec-spin-after-go", "id": "spin-1"})
            http(dev, "POST", "/executions", {"workflow": "quick", "id": "quick-1"})
            errors = len(stack.cloud.errors)
            http(dev, "POST", "/executions/spin-1/signals/go", {})  # the pump's decider loops now
            stopped = until(lambda: len(stack.cloud.errors) > errors, 10)
            error = repr(stack.cloud.errors[-1][1]) if stopped else None
            t = time.monotonic()
            http(dev, "POST", "/executions/quick-1/signals/go", {"payload": {"n": 1}})
            done = until(lambda: http(dev, "GET", "/executions/quick-1")[1]["status"] == "COMPLETED", 10)
            print("RESULT " + json.dumps([stopped, error, done, time.monotonic() - t]), flush=True)
            dev.stopping.set(); dev.httpd.shutdown()
        os._exit(0)
    """)
    stopped, error, done, took = _dev_child(code, "orbit dev hung on code that loops in its decider")
    assert stopped, "the looping decision was never stopped"
    assert "Stalled" in error and "workflow 'sec-spin-after-go' ran 1." in error, error
    assert "sec_loops.py" in error, error  # names the user's line
    assert done, "another execution did not advance after the loop was stopped"


SLOW = """
from tests.security.fixtures.sec_slow import FINISHED, GO, STARTED

HOLDS = {"orbit": 1, "name": "holds", "version": "1",
         "steps": {"a": {"task": "sec.hold", "timeout": "2s", "retry": {"max_attempts": 1},
                         "input": {"s": 20}}}}
HOLDS_INLINE = {"orbit": 1, "name": "holds-inline", "version": "1",
                "steps": {"w": {"wait_for": "go"},
                          "a": {"task": "sec.hold", "inline": True, "timeout": "20s", "input": {"s": 20},
                                "after": ["w"]}}}

def status(dev, eid):
    return http(dev, "GET", "/executions/" + eid)[1]
"""


def test_a_worker_task_past_its_timeout_is_timed_out_at_the_deadline_while_it_still_runs() -> None:
    code = textwrap.dedent(DEV) + textwrap.dedent(SLOW) + textwrap.dedent("""
        with LocalStack(mode="server") as stack:
            stack.register(QUICK)
            stack.register(HOLDS)
            dev = DevServer(stack, port=0)
            threading.Thread(target=dev.serve_forever, daemon=True).start()
            http(dev, "POST", "/executions", {"workflow": "quick", "id": "quick-1"})
            t0 = time.monotonic()
            http(dev, "POST", "/executions", {"workflow": "holds", "id": "holds-1"})
            timed = until(lambda: status(dev, "holds-1")["status"] != "RUNNING", 12)
            at = time.monotonic() - t0
            d = status(dev, "holds-1")
            running = STARTED.is_set() and not FINISHED.is_set()
            t = time.monotonic()
            http(dev, "POST", "/executions/quick-1/signals/go", {"payload": {"n": 1}})
            done = until(lambda: status(dev, "quick-1")["status"] == "COMPLETED", 10)
            other = time.monotonic() - t
            still = STARTED.is_set() and not FINISHED.is_set()
            GO.set()
            until(FINISHED.is_set, 5)
            time.sleep(1.0)  # the late result reaches the decider
            late = status(dev, "holds-1")
            print("RESULT " + json.dumps([timed, at, d, running, done, other, still, late]), flush=True)
            dev.stopping.set(); dev.httpd.shutdown()
        os._exit(0)
    """)
    timed, at, d, running, done, other, still, late = _dev_child(code, "orbit dev hung on a sleeping task")
    assert timed, f"the step's 2 s timeout was not recorded within 12 s: {d}"
    assert 2 <= at < 10, at  # the task holds for 20 s
    assert d["status"] == "FAILED" and d["error"]["code"] == "TIMEOUT", d
    assert running, "the timeout was recorded only after the task returned"
    assert done and other < 5 and still, (done, other, still)
    assert late["status"] == "FAILED" and late["error"] == d["error"], late  # the late result is stale


def test_an_inline_step_running_lets_other_executions_advance_in_orbit_dev() -> None:
    code = textwrap.dedent(DEV) + textwrap.dedent(SLOW) + textwrap.dedent("""
        with LocalStack(mode="server") as stack:
            stack.register(QUICK)
            stack.register(HOLDS_INLINE)
            dev = DevServer(stack, port=0)
            threading.Thread(target=dev.serve_forever, daemon=True).start()
            http(dev, "POST", "/executions", {"workflow": "holds-inline", "id": "inline-1"})
            http(dev, "POST", "/executions", {"workflow": "quick", "id": "quick-1"})
            http(dev, "POST", "/executions/inline-1/signals/go", {})  # the pump's decider runs the step
            began = until(STARTED.is_set, 10)
            t = time.monotonic()
            sent = http(dev, "POST", "/executions/quick-1/signals/go", {"payload": {"n": 1}})[0]
            done = until(lambda: status(dev, "quick-1")["status"] == "COMPLETED", 10)
            other = time.monotonic() - t
            still = not FINISHED.is_set()
            GO.set()
            ended = until(lambda: status(dev, "inline-1")["status"] == "COMPLETED", 10)
            out = status(dev, "inline-1").get("output")
            print("RESULT " + json.dumps([began, sent, done, other, still, ended, out]), flush=True)
            dev.stopping.set(); dev.httpd.shutdown()
        os._exit(0)
    """)
    began, sent, done, other, still, ended, out = _dev_child(code, "orbit dev hung while an inline step ran")
    assert began, "the inline step never started"
    assert sent == 202 and done and other < 5, (sent, done, other)
    assert still, "the other execution advanced only after the inline step ended"
    assert ended and out["a"] == "late", out
