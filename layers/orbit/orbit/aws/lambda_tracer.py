"""powertools' `Tracer` for the handlers, built at the first invocation instead of at import.

`Tracer()` imports the X-Ray SDK (`aws_xray_sdk.core`, its recorder, sampler and patcher) even when
tracing is off, and with tracing on it patches botocore and the HTTP clients. That was 46% of the
decider's cold import (issue 28, section 4). `LambdaTracer` defers it to the start of the first
invocation: the handler's subsegment, the cold-start annotation and the patching are the same as
before, and they happen before the handler builds its first boto3 client (`orbit.aws.wiring`
builds every client on first use), so every AWS call is still traced. What is deferred is paid by
the first invocation only, and not at all by an import that is never invoked (a unit test, a
`sam build` check). docs/decisions/sec-suite-cold-start.md has the figures.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any


class LambdaTracer:
    """Stands for `aws_lambda_powertools.Tracer(**options)`; the tracer is made on first use."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._tracer: Any = None
        self._lock = threading.Lock()

    @property
    def tracer(self) -> Any:
        if self._tracer is None:
            with self._lock:
                if self._tracer is None:
                    from aws_lambda_powertools import Tracer

                    self._tracer = Tracer(**self._options)
        return self._tracer

    def capture_lambda_handler(self, handler: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        """`Tracer.capture_lambda_handler`, applied when the handler is first called."""
        traced: list[Callable[[Any, Any], Any]] = []

        @functools.wraps(handler)
        def run(event: Any, context: Any) -> Any:
            if not traced:
                traced.append(self.tracer.capture_lambda_handler(handler))
            return traced[0](event, context)

        return run

    def __getattr__(self, name: str) -> Any:  # put_annotation, capture_method, provider...
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.tracer, name)
