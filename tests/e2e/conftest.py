from __future__ import annotations

import os
import subprocess
import sys
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
