"""The Tracer port on AWS X-Ray: one segment per decision and per step attempt, in the execution's trace.

Lambda owns the segment of each invocation (powertools' `Tracer` in the handlers records it, with
its subsegments), and an invocation's trace cannot be changed after it started. So each decision
and each step attempt is sent as a segment of its own, through the same X-Ray SDK powertools
wraps, with the trace id and parent the message carried: the API request's trace continues
through every queue hop. Annotations (`execution_id`, `workflow`, `step`, `attempt`, `task`) make
them findable with filter expressions such as `annotation.execution_id = "order-42"`.

Segments go to the X-Ray daemon Lambda runs beside the function (AWS_XRAY_DAEMON_ADDRESS);
`orbit.aws` builds this tracer only when that variable is set.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from orbit.tracing import parse_header


class _Segment:
    def __init__(self, segment: Any, header: str) -> None:
        self._segment = segment
        self.header = header

    def annotate(self, key: str, value: Any) -> None:
        if isinstance(value, (str, int, float, bool)):
            self._segment.put_annotation(key, value)


class XRayTracer:
    def __init__(self, service: str = "orbit", emitter: Any = None,
                 daemon_address: str | None = None) -> None:
        from aws_xray_sdk.core import AWSXRayRecorder
        from aws_xray_sdk.core.context import Context

        self.recorder = AWSXRayRecorder()
        kw: dict[str, Any] = {"context": Context(), "sampling": False, "service": service,
                              "context_missing": "IGNORE_ERROR"}
        if daemon_address:
            kw["daemon_address"] = daemon_address
        if emitter is not None:
            kw["emitter"] = emitter
        self.recorder.configure(**kw)

    def current_header(self) -> str | None:
        import os

        header = os.environ.get("_X_AMZN_TRACE_ID")  # Lambda sets it for the running invocation
        return header or None

    @contextmanager
    def span(self, name: str, parent: str | None, annotations: dict[str, Any]) -> Iterator[_Segment]:
        fields = parse_header(parent)
        sampled = fields.get("Sampled", "1") != "0"
        segment = self.recorder.begin_segment(name=name, traceid=fields.get("Root"),
                                              parent_id=fields.get("Parent"), sampling=int(sampled))
        header = f"Root={segment.trace_id};Parent={segment.id};Sampled={int(sampled)}"
        span = _Segment(segment, header)
        for key, value in annotations.items():
            span.annotate(key, value)
        try:
            yield span
        except Exception as e:
            segment.add_exception(e, [])
            raise
        finally:
            self.recorder.end_segment()
