"""Trace context for one execution, carried from hop to hop (API -> decider -> worker -> decider).

A header is X-Ray's `Root=1-...;Parent=...;Sampled=1`. It travels with every message an execution
sends, as the SQS message attribute `TRACE_ATTRIBUTE` (adapters/sqs.py), and each hop opens its
segment under it, so one execution is one trace. `Tracer` is the port; `PassThrough` (here) keeps
headers flowing where nothing records segments (tests, the local stack); the X-Ray recorder is
`orbit.adapters.xray.XRayTracer`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

TRACE_ATTRIBUTE = "orbit-trace"
BODY_KEY = "trace"  # where a header rides inside a message dict between the handler and the SQS adapter


class Span(Protocol):
    header: str | None  # what messages sent inside this span carry

    def annotate(self, key: str, value: Any) -> None: ...


class Tracer(Protocol):
    def current_header(self) -> str | None:
        """The header of the trace this process is in now (an API request), or None."""
        ...

    def span(self, name: str, parent: str | None, annotations: dict[str, Any]) -> Any:
        """A context manager yielding a Span: one segment under `parent` (a new trace when None)."""
        ...


class _Passed:
    def __init__(self, header: str | None) -> None:
        self.header = header

    def annotate(self, key: str, value: Any) -> None:
        pass


class PassThrough:
    """Records nothing; hands the incoming header on unchanged."""

    def current_header(self) -> str | None:
        return None

    @contextmanager
    def span(self, name: str, parent: str | None, annotations: dict[str, Any]) -> Iterator[_Passed]:
        yield _Passed(parent)


def parse_header(header: str | None) -> dict[str, str]:
    """`Root=1-abc;Parent=def;Sampled=1` -> {"Root": ..., "Parent": ..., "Sampled": ...}."""
    out: dict[str, str] = {}
    for part in (header or "").split(";"):
        key, _, value = part.strip().partition("=")
        if key and value:
            out[key] = value
    return out
