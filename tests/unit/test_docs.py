"""The user documentation lives in the repository and stays true to the code (issue 11)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda p: p.name)
def test_links_point_at_files_in_the_repository_and_nothing_names_shared(doc):
    text = doc.read_text()
    for target in LINK.findall(text):
        if "://" in target:
            continue
        assert (doc.parent / target).exists(), f"{doc.name} links to {target}, which is not in the repository"
    assert "shared/" not in text, f"{doc.name} points users at shared/, which they cannot see"


def test_the_definition_reference_names_every_key_the_validator_accepts():
    from orbit.core.definition.steps_check import COMPENSATE_KEYS, HTTP_KEYS, RETRY_KEYS, STEP_KEYS
    from orbit.core.definition.validate import DEFAULTS_KEYS, SIGNAL_KEYS, TOP_KEYS

    text = (ROOT / "docs" / "definitions.md").read_text()
    keys = {*TOP_KEYS, *STEP_KEYS, *RETRY_KEYS, *HTTP_KEYS, *DEFAULTS_KEYS, *SIGNAL_KEYS, *COMPENSATE_KEYS}
    for key in keys:
        assert f"`{key}" in text, f"docs/definitions.md does not document `{key}`"


def test_the_documented_retry_defaults_are_the_engines():
    from orbit.core.definition.model import RetryPolicy

    text = (ROOT / "docs" / "definitions.md").read_text()
    base = RetryPolicy()
    assert f"| `max_attempts` | `{base.max_attempts}` |" in text
    assert f"| `backoff` | `{base.backoff_ms // 1000}s` |" in text
    assert f"| `multiplier` | `{base.multiplier:g}` |" in text
    assert f"| `jitter` | `{base.jitter}` |" in text
    assert "**nothing is retried**" in text


def test_the_cli_reference_names_every_command():
    from orbit.cli.main import build_parser

    text = (ROOT / "docs" / "cli.md").read_text()
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name in sub.choices:
        assert f"orbit {name}" in text, f"docs/cli.md does not describe `orbit {name}`"
