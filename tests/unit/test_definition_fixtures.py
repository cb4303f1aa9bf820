"""Fixture definitions: the good ones parse; each broken one reports exactly the
problems its `# expect: PATH: TEXT` comment lines list, all in one pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from orbit.core.definition import DefinitionError, load_definition, validate_file
from orbit.errors import ValidationError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "definitions"
GOOD = sorted(p for p in FIXTURES.iterdir() if not p.name.startswith("broken_"))
BROKEN = sorted(FIXTURES.glob("broken_*.yaml"))


def expectations(path: Path) -> list[tuple[str, str]]:
    out = []
    for line in path.read_text().splitlines():
        if line.startswith("# expect: "):
            where, _, text = line[len("# expect: "):].partition(": ")
            out.append((where, text))
    return out


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_good_fixture_parses(path: Path) -> None:
    definition = load_definition(path)
    assert definition.steps
    assert definition.hash.startswith("sha256:")
    assert validate_file(path) == []


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.name)
def test_broken_fixture_reports_every_expected_problem(path: Path) -> None:
    expected = expectations(path)
    assert expected, f"{path.name} has no '# expect:' lines"
    with pytest.raises(ValidationError) as caught:
        load_definition(path)
    problems = caught.value.problems
    for where, text in expected:
        assert any(p.path == where and text in p.message for p in problems), \
            f"missing {where}: {text}\ngot:\n" + "\n".join(map(str, problems))
    # Nothing unexpected either: each problem is accounted for by one expectation.
    assert len(problems) == len(expected), "\n".join(map(str, problems))


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.name)
def test_validate_file_lines_name_the_file_and_path(path: Path) -> None:
    lines = validate_file(path)
    assert len(lines) == len(expectations(path))
    for line, (where, _) in zip(sorted(lines), sorted(expectations(path)), strict=False):
        assert line.startswith(f"{path}: ")
    assert any(f"{path}: {where}: " in line or (not where and line.startswith(f"{path}: "))
               for line in lines for where, _ in expectations(path))


def test_error_str_names_the_file() -> None:
    path = FIXTURES / "broken_references.yaml"
    with pytest.raises(DefinitionError) as caught:
        load_definition(path)
    assert caught.value.source == str(path)
    assert str(caught.value).startswith(f"{path}: ")
