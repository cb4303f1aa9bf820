from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def orbit_cli(
    *args: str, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run `python -m orbit.cli.main ...` from the repository root, as a user would run `orbit`."""
    return subprocess.run(
        [sys.executable, "-m", "orbit.cli.main", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def cli():
    return orbit_cli


@contextmanager
def orbit_dev(*args: str, stderr: int | None = subprocess.DEVNULL) -> Iterator[tuple[str, list[str]]]:
    """`orbit dev ARGS --port 0` as a user runs it; yields (API url, the lines it printed so far,
    kept up to date by a reader thread). `stderr=subprocess.STDOUT` keeps its warnings in `lines`."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "orbit.cli.main", "dev", *args, "--port", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True,
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while not any(line.startswith("try: ") for line in lines):
            assert time.monotonic() < deadline and proc.poll() is None, f"orbit dev did not start: {lines}"
            lines.append(proc.stdout.readline())
        url = re.search(r"API on (http://127\.0\.0\.1:\d+)", "".join(lines)).group(1)
        reader = threading.Thread(target=lambda: [lines.append(line) for line in proc.stdout], daemon=True)
        reader.start()
        yield url, lines
    finally:
        proc.terminate()
        proc.wait(timeout=20)
