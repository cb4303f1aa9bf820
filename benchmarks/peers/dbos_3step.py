"""The benchmark's 3-step workflow on DBOS (SQLite system database). Prints JSON {n, seconds}.

Run with the peers venv (bench_local.py creates it): python dbos_3step.py N WORKDIR
"""

import json
import os
import sys
import time

from dbos import DBOS

N = int(sys.argv[1])
os.chdir(sys.argv[2])

DBOS(config={"name": "orbit-bench", "system_database_url": "sqlite:///dbos_bench.sqlite"})


@DBOS.step()
def step_a(x: int) -> int:
    return x + 1


@DBOS.step()
def step_b(x: int) -> int:
    return x * 2


@DBOS.step()
def step_c(x: int) -> int:
    return x - 3


@DBOS.workflow()
def three_steps(x: int) -> int:
    return step_c(step_b(step_a(x)))


DBOS.launch()
started = time.perf_counter()
handles = [DBOS.start_workflow(three_steps, i) for i in range(N)]
results = [h.get_result() for h in handles]
elapsed = time.perf_counter() - started
assert results == [(i + 1) * 2 - 3 for i in range(N)], "wrong results"
DBOS.destroy()
print(json.dumps({"n": N, "seconds": elapsed}))
