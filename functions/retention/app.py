"""Retention collector: TTL removed a payload reference; delete the object if nobody else holds it.

The table's stream (keys only), filtered in template.yaml to TTL deletions of `BLOB#<sha256> /
R#<execution id>` items, invokes this with batches of such removals. For each object named, the
collector takes the object's lease, and deletes it only if no unexpired reference is left
(orbit/adapters/dynamodb/retention.py has the protocol and why it is safe against a writer that
references the object at the same moment). A failed object fails its records only
(ReportBatchItemFailures); after the retries they reach the retention DLQ.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from orbit.aws.lambda_tracer import LambdaTracer
from orbit.aws.wiring import services

logger = Logger()
metrics = Metrics()
tracer = LambdaTracer()  # powertools' Tracer, made at the first invocation (cold start)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from orbit.adapters.dynamodb.retention import collect_removed  # at the first invocation

    svc = services()
    deleted, failures = collect_removed(event.get("Records", []), svc.blobs, svc.payloads.delete)
    metrics.add_metric(name="PayloadObjectsDeleted", unit=MetricUnit.Count, value=deleted)
    logger.info("payload references expired", records=len(event.get("Records", [])), deleted=deleted,
                failed=len(failures))
    return {"batchItemFailures": [{"itemIdentifier": seq} for seq in failures]}
