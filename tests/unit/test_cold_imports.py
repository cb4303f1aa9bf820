"""Cold starts (issue 28, section 4; docs/decisions/sec-suite-cold-start.md): importing a handler
imports neither the X-Ray SDK, nor the definition loader and jsonschema, nor the engine; its first
invocation does, and tracing is as it was: powertools' handler subsegment in the invocation's
trace, the cold-start annotation, botocore patched before the first client is made.

Each check runs `import app` in a fresh interpreter (what is imported is process state). Which
modules are loaded is asserted, not a time: benchmarks/bench_cold_start.py prints the times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
HANDLERS = sorted(p.parent.name for p in (ROOT / "functions").glob("*/app.py"))
DEFERRED = ["aws_xray_sdk.core", "jsonschema", "orbit.core.definition.load", "orbit.service.engine"]
ENV = {"ORBIT_TABLE": "t", "ORBIT_BUCKET": "b", "ORBIT_DECISION_QUEUE_URL": "https://sqs/decisions",
       "AWS_DEFAULT_REGION": "us-east-1"}


def _run(code: str, cwd: Path, env: dict[str, str]) -> Any:
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **ENV, **env})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", HANDLERS)
def test_importing_a_handler_defers_the_xray_sdk_the_definition_loader_and_the_engine(name: str) -> None:
    loaded = _run(f"""
import json, sys
import app
print(json.dumps([m for m in {DEFERRED!r} if m in sys.modules]))
""", ROOT / "functions" / name, {})
    assert loaded == [], f"functions/{name}/app.py imports {loaded} at import (cold start)"


def test_the_first_invocation_traces_as_before_with_tracing_on() -> None:
    """In Lambda with Tracing: Active (LAMBDA_TASK_ROOT, a trace header): the first invocation
    builds powertools' Tracer, which patches botocore, and each invocation is a `## handler`
    subsegment of the invocation's trace, ColdStart true only on the first."""
    got = _run("""
import json, sys
import app
before = "aws_xray_sdk.core" in sys.modules
from aws_xray_sdk.core import patcher, xray_recorder
sent = []
class Capture:
    def send_entity(self, entity): sent.append(json.loads(entity.serialize()))
    def set_daemon_address(self, address): pass
xray_recorder.emitter = Capture()  # stands in for the UDP emitter to the X-Ray daemon
def handler(event, context):
    return {"answer": event["n"] + 1}
run = app.tracer.capture_lambda_handler(handler)
answers = [run({"n": 1}, None), run({"n": 2}, None)]
print(json.dumps([before, answers, sorted(patcher._PATCHED_MODULES),
                  [(s["name"], s["trace_id"], s["annotations"]["ColdStart"]) for s in sent]]))
""", ROOT / "functions" / "decider", {
        "LAMBDA_TASK_ROOT": "/var/task", "AWS_LAMBDA_FUNCTION_NAME": "decider",
        "POWERTOOLS_TRACE_DISABLED": "false",
        "_X_AMZN_TRACE_ID": "Root=1-6756d6a0-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1"})
    before, answers, patched, segments = got
    assert before is False
    assert answers == [{"answer": 2}, {"answer": 3}]
    assert "botocore" in patched
    trace = "1-6756d6a0-0123456789abcdef01234567"
    assert segments == [["## handler", trace, True], ["## handler", trace, False]]
