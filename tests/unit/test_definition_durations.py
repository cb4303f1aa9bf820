from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from orbit.core.definition import DurationError, format_duration, parse_duration


@pytest.mark.parametrize("text, ms", [
    ("500ms", 500), ("30s", 30_000), ("5m", 300_000), ("2h", 7_200_000), ("7d", 604_800_000),
    ("1w", 604_800_000), ("1h30m", 5_400_000), ("1.5s", 1500), ("0s", 0), (" 10m ", 600_000),
    ("PT1H30M", 5_400_000), ("P7D", 604_800_000), ("PT0.5S", 500), ("P1DT2H", 93_600_000),
    ("pt10s", 10_000), ("P2W", 1_209_600_000), (0, 0), (1500, 1500),
])
def test_accepted(text: object, ms: int) -> None:
    assert parse_duration(text) == ms


@pytest.mark.parametrize("value, message", [
    ("30", "has no unit"), ("5 m", "not a duration"), ("P1Y", "years or months"), ("P1M", "years or months"),
    ("PT", "not a duration"), ("P", "not a duration"), ("", "not a duration"), ("1.0001ms", "whole number"),
    ("-5s", "not a duration"), (-1, "negative"), (True, "not a duration"), (None, "not a duration"),
    (1.5, "not a duration"), ("P40000D", "longer than 100 years"), ("10 minutes", "not a duration"),
])
def test_refused_with_a_clear_message(value: object, message: str) -> None:
    with pytest.raises(DurationError, match=message) as caught:
        parse_duration(value)
    assert isinstance(caught.value, ValueError)


@given(st.integers(min_value=0, max_value=100 * 365 * 86_400_000))
def test_format_round_trips(ms: int) -> None:
    assert parse_duration(format_duration(ms)) == ms


@given(st.text(max_size=20))
def test_any_text_gives_ms_or_duration_error(text: str) -> None:
    try:
        assert parse_duration(text) >= 0
    except DurationError:
        pass
