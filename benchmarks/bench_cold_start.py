"""Cold imports of the Lambda handlers against a bare `import boto3, aws_lambda_powertools` (issue 28,
section 4). A script that prints figures, not a timed test.

    python benchmarks/bench_cold_start.py [--runs N] [--root CHECKOUT]

Each measurement is a whole process, `python -c "import app"` in `functions/NAME`, timed from
outside (start to exit), as Lambda's INIT phase would see it. The runs are paired: each round
runs the bare import and then every handler, so a machine that is busier in one moment slows all
of them alike. Printed per handler: the median over N rounds, the median of its per-round ratio to
the bare import in the same round, and whether that ratio is within the target (1.5x).

Outside Lambda powertools' tracing is off, but `Tracer()` imports the X-Ray SDK all the same. With
the lazy imports (docs/decisions/sec-suite-cold-start.md) the X-Ray SDK, boto3, the definition
loader and the engine are imported by the first invocation instead, so a second column, "+ first
use", times `import app` followed by what a first invocation builds before it touches AWS: the
tracer (`app.tracer.tracer` with the lazy tracer) and the services' engine or worker (clients are
made, no request is sent). `--root` measures another checkout's functions and layer (say, main's,
for the figures before the change).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BARE = "import boto3, aws_lambda_powertools"
TARGET = 1.5
# What a deployed function has in its environment at import (template.yaml); no AWS call is made.
ENV = {"ORBIT_TABLE": "t", "ORBIT_BUCKET": "b", "ORBIT_DECISION_QUEUE_URL": "https://sqs/decisions",
       "AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_SERVICE_NAME": "orbit"}


FIRST_USE = """
import app
getattr(app.tracer, "tracer", None)  # the lazy tracer builds powertools' Tracer here
if hasattr(app, "services"):
    app.services().engine
else:
    from orbit.aws.wiring import services
    services().worker
"""


def once(code: str, cwd: Path, layer: Path | None = None) -> float:
    env = {**os.environ, **ENV}
    if layer is not None:  # ahead of the editable install
        env["PYTHONPATH"] = os.pathsep.join([str(layer), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, check=True)
    return time.perf_counter() - started


def handlers(root: Path) -> list[str]:
    return sorted(p.parent.name for p in (root / "functions").glob("*/app.py"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout to time")
    args = parser.parse_args()
    root = args.root.resolve()
    layer = root / "layers" / "orbit"
    names = handlers(root)
    once(BARE, root)  # byte-compiled files and the page cache warm, as on a Lambda's second cold start
    for name in names:
        once(FIRST_USE, root / "functions" / name, layer)
    bare: list[float] = []
    times: dict[str, list[float]] = {n: [] for n in names}
    ratios: dict[str, list[float]] = {n: [] for n in names}
    first: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(args.runs):
        b = once(BARE, root)
        bare.append(b)
        for name in names:
            t = once("import app", root / "functions" / name, layer)
            times[name].append(t)
            ratios[name].append(t / b)
            first[name].append(once(FIRST_USE, root / "functions" / name, layer))
    print(f"{root}: cold import, whole process, median of {args.runs} paired runs ({os.cpu_count()} CPUs)")
    print(f"{'import':<40} {'median ms':>9} {'x bare':>7}  {'verdict':<9} {'+ first use ms':>14}")
    print(f"{BARE:<40} {statistics.median(bare) * 1000:>9.0f} {1.0:>7.2f}")
    worst = 0.0
    for name in names:
        ratio = statistics.median(ratios[name])
        worst = max(worst, ratio)
        verdict = "ok" if ratio <= TARGET else f"over {TARGET}x"
        print(f"{'functions/' + name + ' import app':<40} {statistics.median(times[name]) * 1000:>9.0f} "
              f"{ratio:>7.2f}  {verdict:<9} {statistics.median(first[name]) * 1000:>14.0f}")
    print(f"worst: {worst:.2f}x bare (target <= {TARGET}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
