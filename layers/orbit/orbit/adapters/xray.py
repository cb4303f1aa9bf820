"""The Tracer port on AWS X-Ray: one segment per decision and per step attempt, in the execution's trace.

Lambda owns the segment of each invocation (powertools' `Tracer` in the handlers records it, with
its subsegments), and an invocation's trace cannot be changed after it started. So each decision
and each step attempt is sent as a segment of its own, built with the X-Ray SDK powertools wraps,
carrying the trace id and parent the message brought: the API request's trace continues through
every queue hop. Annotations (`execution_id`, `workflow`, `step`, `attempt`, `task`) make them
findable with filter expressions such as `annotation.execution_id = "order-42"`.

Segments go to the X-Ray daemon Lambda runs beside the function (AWS_XRAY_DAEMON_ADDRESS, UDP);
`orbit.aws.wiring` builds this tracer only when that variable is set. When the SDK is switched off
(POWERTOOLS_TRACE_DISABLED, AWS_XRAY_SDK_ENABLED=false) headers pass through and nothing is sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from orbit.core.tracing import parse_header


class _Segment:
    def __init__(self, segment: Any, header: str | None) -> None:
        self._segment = segment
        self.header = header or None

    def annotate(self, key: str, value: Any) -> None:
        if self._segment is not None and isinstance(value, (str, int, float, bool)):
            self._segment.put_annotation(key, value)


def _sdk_enabled() -> bool:
    from aws_xray_sdk import global_sdk_config

    return bool(global_sdk_config.sdk_enabled())


class XRayTracer:
    def __init__(self, emitter: Any = None, daemon_address: str | None = None,
                 enabled: Callable[[], bool] = _sdk_enabled) -> None:
        if emitter is None:
            from aws_xray_sdk.core.emitters.udp_emitter import DEFAULT_DAEMON_ADDRESS, UDPEmitter

            emitter = UDPEmitter(daemon_address or DEFAULT_DAEMON_ADDRESS)
        self.emitter = emitter
        self._enabled = enabled

    def current_header(self) -> str | None:
        import os

        header = os.environ.get("_X_AMZN_TRACE_ID")  # Lambda sets it for the running invocation
        return header or None

    @contextmanager
    def span(self, name: str, parent: str | None, annotations: dict[str, Any]) -> Iterator[_Segment]:
        if not self._enabled():
            yield _Segment(None, parent)
            return
        from aws_xray_sdk.core.models.segment import Segment

        fields = parse_header(parent)
        sampled = fields.get("Sampled", "1") != "0"
        segment = Segment(name, traceid=fields.get("Root"), parent_id=fields.get("Parent"), sampled=sampled)
        span = _Segment(segment, f"Root={segment.trace_id};Parent={segment.id};Sampled={int(sampled)}")
        for key, value in annotations.items():
            span.annotate(key, value)
        try:
            yield span
        except Exception as e:
            segment.add_exception(e, [])
            raise
        finally:
            segment.close()
            if sampled:
                self.emitter.send_entity(segment)
