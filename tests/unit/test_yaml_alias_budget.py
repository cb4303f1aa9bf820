"""A YAML alias bomb is refused where it is loaded, before anything walks it (issue 25, Low).

Loading shares one object per anchor, so a 1.3 KB file of nine levels of ten aliases loads at once;
`orbit test` then walked it value by value (10^9 values: 77 s). Every definition and test file is
read by `orbit.core.definition.load.parse_text`, which now counts values once per use, up to
`MAX_VALUES`. Each case runs in a child process with a time limit (child_run.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from orbit.core.definition.checks import MAX_VALUES
from orbit.core.definition.load import parse_text
from orbit.core.definition.parse import DefinitionError

from tests.unit.child_run import run_in_child

ROOT = Path(__file__).resolve().parents[2]


def bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        p = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([p] * 10)}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_in_a_test_file_is_refused_by_orbit_test_within_a_time_limit(tmp_path: Path) -> None:
    test_file = tmp_path / "bomb.test.yaml"
    (tmp_path / "wf.yaml").write_text((ROOT / "examples" / "order_fulfilment.yaml").read_text())
    text = "definition: wf.yaml\n" + bomb() + "tests:\n  t:\n    input: *a8\n"
    assert len(text) < 1_400
    test_file.write_text(text)
    got = run_in_child(f"""
        import contextlib, io
        from orbit.cli.main import main
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
            code = main(["test", {str(test_file)!r}])
        emit([code, err.getvalue()])
    """, 30, "a YAML alias bomb walked value by value")
    code, printed = got
    assert code != 0 and f"more than {MAX_VALUES} values" in printed, printed


@pytest.mark.parametrize("text", [bomb(), "steps: &s\n  x: *s\n"], ids=["bomb", "recursive"])
def test_an_alias_bomb_or_a_recursive_alias_is_refused_where_yaml_is_read(text: str) -> None:
    got = run_in_child(f"""
        from orbit.core.definition.load import parse_text
        from orbit.core.definition.parse import DefinitionError
        try:
            parse_text({text!r})
            emit("accepted")
        except DefinitionError as e:
            emit(str(e))
    """, 20, "an alias bomb expanded while it is read")
    assert f"more than {MAX_VALUES} values (YAML anchors and aliases count once per use)" in got \
        or "nested more than" in got, got


def test_ordinary_anchors_still_load() -> None:
    doc = parse_text("defaults: &d {retry: 3}\nsteps:\n  a: {<<: *d, task: t}\n  b: *d\n")
    assert doc["steps"]["a"] == {"retry": 3, "task": "t"} and doc["steps"]["b"] == {"retry": 3}
    with pytest.raises(DefinitionError):
        parse_text(bomb(6))  # 10^6 values from a few hundred characters
