"""scripts/check_template.sh when the SAM CLI cannot be installed: a developer's machine without
registry access gets "SKIPPED" and exit 0 (tests/template still lints the template), CI fails."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run_without_registry(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess:
    # A copy of the script in an empty project, with a `python3` that cannot make the venv.
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "check_template.sh", tmp_path / "scripts")
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "python3").write_text("#!/bin/sh\necho 'no registry here' >&2\nexit 1\n")
    (fake_bin / "python3").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = f"{fake_bin}{os.pathsep}{env.get('PATH', '')}"
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(["bash", str(tmp_path / "scripts" / "check_template.sh")], env=env,
                          capture_output=True, text=True, timeout=60)


def test_without_the_sam_cli_a_developer_run_is_skipped(tmp_path: Path) -> None:
    res = _run_without_registry(tmp_path, ci=None)
    assert res.returncode == 0, res.stderr
    assert "check_template: SKIPPED - could not install aws-sam-cli" in res.stdout


def test_without_the_sam_cli_ci_fails(tmp_path: Path) -> None:
    res = _run_without_registry(tmp_path, ci="true")
    assert res.returncode == 1
    assert "SKIPPED" not in res.stdout
    assert "check_template: FAILED - could not install aws-sam-cli under CI" in res.stderr
