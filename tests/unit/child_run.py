"""Run a piece of Python in a fresh interpreter with a time limit. The hostile-schema tests use it:
a regression (a check that never ends) then fails its test instead of hanging the suite."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]  # `tests.unit.dsl_harness` imports from here

PRELUDE = """
import json
from orbit.service.http import handle_request
from orbit.testing.simulator import Simulator
from tests.unit.dsl_harness import definition
def emit(value):
    print("RESULT " + json.dumps(value))
"""


def run_in_child(body: str, timeout_s: float, why: str, setup: str = "") -> Any:
    """Run PRELUDE, `setup` and `body` in a fresh interpreter; returns what the code passed to
    `emit(...)`. A run past `timeout_s` fails the test with `why` (what must have gone wrong)."""
    code = PRELUDE + textwrap.dedent(setup) + textwrap.dedent(body)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout_s, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"no answer within {timeout_s} s: {why}")
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])
