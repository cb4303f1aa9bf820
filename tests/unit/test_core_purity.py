"""The pure core imports nothing from AWS and reads no clock, randomness or environment.

An AST scan (not a grep) of every core module: imports of boto3/botocore/random/
secrets/uuid/time and calls such as `datetime.now()` or `os.environ` fail the test,
naming the file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import orbit

PKG = Path(orbit.__file__).parent
CORE = ["errors.py", "core/**/*.py"]  # the whole core package: the layer is the unit
BANNED_MODULES = {"boto3", "botocore", "random", "secrets", "uuid", "time", "aioboto3"}
BANNED_ATTRS = {
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
    ("os", "environ"),
    ("os", "getenv"),
    ("os", "urandom"),
    ("time", "time"),
}


def core_files() -> list[Path]:
    files = sorted({p for pattern in CORE for p in PKG.glob(pattern)})
    assert len(files) > 15, files
    return files


def violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for n in names:
            if n.split(".")[0] in BANNED_MODULES:
                out.append(f"{path.name}:{node.lineno}: imports {n}")
        if isinstance(node, ast.Attribute):
            owner = (
                node.value.id
                if isinstance(node.value, ast.Name)
                else node.value.attr
                if isinstance(node.value, ast.Attribute)
                else None
            )
            if (owner, node.attr) in BANNED_ATTRS:
                out.append(f"{path.name}:{node.lineno}: uses {owner}.{node.attr}")
    return out


def test_core_modules_are_pure() -> None:
    found = [v for f in core_files() for v in violations(f)]
    assert found == []


def test_the_scan_catches_what_it_bans(tmp_path: Path) -> None:
    bad = tmp_path / "probe.py"
    src = (
        "import boto3\nfrom random import random\nimport datetime\nx = datetime.datetime.now()\nimport os\n"
        "y = os.environ['A']\n"
    )
    bad.write_text(src)
    found = violations(bad)
    assert [v.split(": ", 1)[1] for v in found] == [
        "imports boto3",
        "imports random",
        "uses datetime.now",
        "uses os.environ",
    ]
