"""Every test runs under pytest-timeout (issue 28): a hung test fails in minutes, not at CI's cap."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_the_suite_sets_a_timeout_for_every_test(pytestconfig) -> None:
    # [tool.pytest.ini_options] timeout; the key exists only when the plugin is installed
    assert float(pytestconfig.getini("timeout")) == 900


def test_a_hung_test_fails_with_a_timeout(tmp_path: Path) -> None:
    (tmp_path / "test_hangs.py").write_text("import time\n\ndef test_hangs():\n    time.sleep(60)\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\ntimeout = 1\n")  # the same key, shorter
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", "pytest.ini",
                          "test_hangs.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Timeout (>1.0s) from pytest-timeout" in res.stdout + res.stderr
