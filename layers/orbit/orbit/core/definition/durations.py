"""Durations: ``500ms``, ``30s``, ``5m``, ``2h``, ``7d`` (also compound ``1h30m``) or ISO 8601.

Everything becomes an integer number of milliseconds. A bare integer passed to
:func:`parse_duration` is taken as milliseconds (the engine's own unit); the
definition validator insists on a unit, because ``timeout: 30`` in a YAML file
is ambiguous to a reader (30 seconds? 30 ms?).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from types import MappingProxyType

_UNIT_MS = MappingProxyType(
    {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000})
_SHORT_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_SHORT_WHOLE = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+")
# Years and months are refused: their length in milliseconds depends on the calendar.
_ISO = re.compile(
    r"P(?:(?P<w>\d+(?:\.\d+)?)W)?(?:(?P<d>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?"
)
_ISO_UNITS = MappingProxyType({"w": "w", "d": "d", "h": "h", "m": "m", "s": "s"})

# A hundred years: beyond that a value is a typo, and timestamps would overflow date formatting.
MAX_DURATION_MS = 100 * 365 * 86_400_000

_HINT = "use 500ms, 30s, 5m, 2h, 7d (or a mix like 1h30m) or ISO 8601 like PT1H30M, P7D"


class DurationError(ValueError):
    """A duration that cannot be read; the message says what was given and what is accepted."""


def parse_duration(value: object) -> int:
    """Return ``value`` in milliseconds, or raise :class:`DurationError` (a ``ValueError``)."""
    if isinstance(value, bool):  # bool is an int subclass; True is not a duration
        raise DurationError(f"not a duration: {value!r}; {_HINT}")
    if isinstance(value, int):
        if value < 0:
            raise DurationError(f"a duration cannot be negative: {value}")
        return _checked(value, value)
    if not isinstance(value, str):
        raise DurationError(f"not a duration: {value!r} ({type(value).__name__}); {_HINT}")
    text = value.strip()
    if _SHORT_WHOLE.fullmatch(text):
        total = sum((_amount(n) * _UNIT_MS[u] for n, u in _SHORT_PART.findall(text)), Decimal(0))
        return _to_ms(total, value)
    iso = _ISO.fullmatch(text.upper())
    if iso and text.upper() not in ("P", "PT") and not text.upper().endswith("T"):
        parts = {k: v for k, v in iso.groupdict().items() if v is not None}
        if parts:
            total = sum((_amount(v) * _UNIT_MS[_ISO_UNITS[k]] for k, v in parts.items()), Decimal(0))
            return _to_ms(total, value)
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        raise DurationError(f"duration {value!r} has no unit; {_HINT}")
    if re.match(r"P[^T]*[YM]", text.upper()):
        raise DurationError(f"duration {value!r} uses years or months, whose length varies; use days")
    raise DurationError(f"not a duration: {value!r}; {_HINT}")


def _amount(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation as exc:  # cannot happen with the regexes above, kept for a clear message
        raise DurationError(f"not a number: {text!r}") from exc


def _to_ms(total: Decimal, original: str) -> int:
    if total != total.to_integral_value():
        raise DurationError(f"duration {original!r} is not a whole number of milliseconds")
    return _checked(int(total), original)


def _checked(ms: int, original: object) -> int:
    if ms > MAX_DURATION_MS:
        raise DurationError(f"duration {original!r} is longer than 100 years")
    return ms


def format_duration(ms: int) -> str:
    """The shortest exact short form, e.g. 90000 -> ``1m30s`` (for messages and docs)."""
    if ms == 0:
        return "0s"
    out = []
    for unit in ("d", "h", "m", "s", "ms"):
        size = _UNIT_MS[unit]
        count, ms = divmod(ms, size)
        if count:
            out.append(f"{count}{unit}")
    return "".join(out)
