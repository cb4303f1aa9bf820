"""The code-workflow scenarios pass with no paused instance kept between decisions (issue 24).

The paused-instance cache (`orbit.core.runtime.code.replayer`) is an optimisation only: every decision
must come out the same when the workflow replays from its first call. This runs the scenario
tests of `test_code_*.py` (and the recovery ones) in a child pytest whose `Harness` engines get
`CodeRuntime(cache_size=0)` (the `code_cold` plugin: a parameter of the engine, not the process's
runtime), and checks they pass and that no decision there was warm.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# about the cache itself (threads of cached instances), meaningless without one
CACHE_ONLY = ["test_code_replay.py::test_discarded_instances_do_not_leak_threads"]


@pytest.mark.slow
def test_code_scenarios_pass_when_every_decision_replays_cold() -> None:
    files = sorted(p.name for p in HERE.glob("test_code_*.py") if p.name != Path(__file__).name)
    files.append("test_recovery_code.py")
    args = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-p", "code_cold",
            "-q", "-o", "addopts=", *[f"tests/unit/{f}" for f in files],
            *[f"--deselect=tests/unit/{t}" for t in CACHE_ONLY]]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    passed = int(re.search(r"(\d+) passed", out).group(1))  # type: ignore[union-attr]
    assert passed >= 100, out[-2000:]
    m = re.search(r"cold decisions: (\d+) harnesses, (\d+) replays, (\d+) warm, (\d+) on the process", out)
    assert m is not None, out[-2000:]
    harnesses, replays, warm, shared = map(int, m.groups())
    assert harnesses >= 80 and replays > harnesses and warm == 0 and shared == 0, m.group(0)
