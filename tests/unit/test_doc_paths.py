"""Every file a user doc names exists (issue 28): docs that name removed files mislead readers.

The rule, kept simple on purpose. In README.md and docs/*.md, a file is named by a word in
backticks that ends in a file extension (.py .md .yaml .yml .json .sh .toml .js .css .html .lock
.txt .png), optionally followed by `:LINE`, and that either contains a slash
(`layers/orbit/orbit/service/engine.py`, `orbit/local/clock.py`, `service/engine.py`,
`examples/order_fulfilment.yaml`) or is a bare Python file name (`decide.py`). Such a name must
be the end of the path of a file in the repository (git's list of files), at a `/` boundary: a
doc may write a path from the repository root or shortened from the left, as `runtime/dsl.py`
for layers/orbit/orbit/core/runtime/dsl.py.

Not checked: a bare non-Python name (`other.json`, a user's own file), a word starting with `.`
(`.test.yaml`, an extension), directories, URLs and links (tests/unit/test_docs.py checks
links), dotted module names, and docs/decisions/ (records of past choices may name what was).

Also here: docs/decisions/README.md links every record in docs/decisions/, and only records that exist.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NAMED = re.compile(r"`([\w./-]+\.(?:py|md|ya?ml|json|sh|toml|js|css|html|lock|txt|png))(?::\d+)?`")


def named_files(text: str) -> list[tuple[int, str]]:
    """(line number, name) of each file the text names, by the rule above."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        for name in NAMED.findall(line):
            if name.startswith(".") or ("/" not in name and not name.endswith(".py")):
                continue
            out.append((number, name))
    return out


def missing(names: list[tuple[int, str]], files: list[str]) -> list[str]:
    return [f"line {number}: `{name}`" for number, name in names
            if not any(f == name or f.endswith("/" + name) for f in files)]


@pytest.fixture(scope="module")
def repo_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    assert "layers/orbit/orbit/service/engine.py" in listed
    return listed


def test_the_rule_finds_paths_and_python_names_and_leaves_the_rest() -> None:
    text = ("`layers/orbit/orbit/service/engine.py` and `runtime/dsl.py:12`, once `decider.py` and\n"
            "`engine/abort.py`; not `other.json`, `.test.yaml`, `orbit.http`, `payloads/` or `make test`")
    names = named_files(text)
    assert names == [(1, "layers/orbit/orbit/service/engine.py"), (1, "runtime/dsl.py"), (1, "decider.py"),
                     (2, "engine/abort.py")]
    files = ["layers/orbit/orbit/service/engine.py", "layers/orbit/orbit/core/runtime/dsl.py"]
    assert missing(names, files) == ["line 1: `decider.py`", "line 2: `engine/abort.py`"]
    assert missing([(1, "dsl.py")], ["x/redsl.py"]) == ["line 1: `dsl.py`"]  # whole names only


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_file_a_doc_names_exists(doc: Path, repo_files: list[str]) -> None:
    gone = missing(named_files(doc.read_text()), repo_files)
    assert not gone, f"{doc.relative_to(ROOT)} names files that do not exist: {'; '.join(gone)}"


DECISIONS = ROOT / "docs" / "decisions"
INDEX_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def unindexed(index_text: str, names: list[str]) -> list[str]:
    """The records in names that docs/decisions/README.md does not link to."""
    linked = set(INDEX_LINK.findall(index_text))
    return [name for name in names if name != "README.md" and name not in linked]


def test_the_decision_index_finds_a_record_it_does_not_link() -> None:
    assert unindexed("- [0001-a.md](0001-a.md): a", ["README.md", "0001-a.md", "x-b.md"]) == ["x-b.md"]


def test_the_decision_index_links_every_record_and_only_records_that_exist() -> None:
    text = (DECISIONS / "README.md").read_text()
    names = sorted(p.name for p in DECISIONS.glob("*.md"))
    missing_from_index = unindexed(text, names)
    assert not missing_from_index, f"docs/decisions/README.md does not list: {', '.join(missing_from_index)}"
    dangling = [t for t in INDEX_LINK.findall(text) if "://" not in t and not (DECISIONS / t).exists()]
    assert not dangling, f"docs/decisions/README.md links to records that do not exist: {', '.join(dangling)}"
