"""The pure text helpers behind the CLI's output: cutting, fan-out rows, the Mermaid graph."""

from __future__ import annotations

from orbit.core.definition import parse_definition
from orbit.core.definition.mermaid import to_mermaid
from orbit.local.text import cut, utc, value_lines
from orbit.local.timeline import Row, collapse_fanouts


def test_cut_ends_with_an_ellipsis_only_when_it_cuts():
    assert cut("abcdef", 4) == "abc…" and len(cut("abcdef", 4)) == 4
    assert cut("abc", 4) == "abc" and cut("abcdef", None) == "abcdef"
    assert cut("a\nb", None) == "a b"  # one line, always


def test_utc_and_long_values():
    assert utc(0) == "-" and utc(None) == "-"
    assert utc(1_764_600_000_123) == "2025-12-01 14:40:00Z"
    assert utc(1_764_600_000_123, millis=True) == "2025-12-01 14:40:00.123Z"
    assert value_lines("output", {"a": 1}, 80) == ["output: {", '  "a": 1', "}"]
    (line,) = value_lines("output", list(range(100)), 60)
    assert (
        line.startswith("output: [0, 1, 2")
        and "…" in line
        and line.endswith("--expand or --json prints all of it")
    )
    assert len(value_lines("output", list(range(100)), 60, expand=True)) == 102


def test_a_fan_out_collapses_to_one_row_with_counts_and_percentiles():
    rows = [Row(0, "prep", 1, 5, "succeeded")]
    rows += [Row(10 + i, f"ship[{i}]", 1, 10 * (i + 1), "succeeded") for i in range(99)]
    rows += [
        Row(5, "ship[99]", 1, 50, "attempt failed  X"),
        Row(6, "ship[99]", 2, None, "retry in 1.0s"),
        Row(500, "ship[99]", 2, 2000, "FAILED  X: boom"),
        Row(600, "execution", None, 600, "FAILED"),
    ]
    out = collapse_fanouts(rows)
    assert [r.unit for r in out] == ["prep", "ship[0..99]", "execution"]
    text = out[1].outcome
    assert text.startswith("100 elements: 99 succeeded, 1 FAILED; 1 retry")
    assert "p50 500ms" in text and "p99 990ms" in text


def test_the_graph_shows_each_construct_and_no_label_can_break_out():
    d = parse_definition(
        {
            "orbit": 1,
            "name": "g",
            "steps": {
                "a": {"task": "t.a", "compensate": {"task": "t.undo"}},
                "b": {
                    "after": ["a"],
                    "when": '{% input.x = "]\\"] --> evil" %}',
                    "for": "{% input.items %}",
                    "task": "t.b",
                    "concurrency": 2,
                },
                "c": {"sleep": "90m"},
                "d": {"wait_for": "go", "timeout": "1d"},
                "e": {"compute": "{% steps.b.output %}"},
            },
        }
    )
    text = to_mermaid(d)
    assert "s0 --> s1" in text and "s1 --> s4" in text
    assert "s0 -. compensate .-> s0_undo" in text and "undo a<br/>task t.undo" in text
    assert "<b>b[*]</b>" in text and "for each of input.items, 2 at a time" in text
    assert "sleep 90m" in text and "wait for go" in text
    when = next(line for line in text.splitlines() if line.startswith("  s1["))
    assert when.count('"') == 2 and "#quot;" in when and "--#gt;" in when  # the label stays one label
