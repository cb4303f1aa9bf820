"""Timers: every minute (EventBridge schedule), hand durable timers to the decision queue on time.

Timers up to 15 minutes ride on SQS DelaySeconds and never reach this
function; the longer ones (sleeps, step and queue deadlines, workflow
timeouts) are items in the table. Each tick hands every timer due within the
next `lead` (ORBIT_TIMER_LEAD_S, 900 s by default) to SQS as a `wake` delayed
to its exact second, so it lands on time rather than at the next tick
(docs/decisions/timers-on-the-second.md). With no lead (0, or ORBIT_TIMERS=table)
it fires what is due, a little after its time (`SKEW_MS`) so a decider whose
clock runs slightly behind still finds it due; with a lead, a wake that lands
early (a clock behind) re-arms itself for the remaining second.

Each tick also runs the retention sweeper (orbit/service/retention.py): the items of executions
that outlived their first hour lose their provisional expiry before it can come.
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

SKEW_MS = 1_000
BATCH = 100
SWEEP_BATCH = 25


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, int]:
    svc = services()
    lead = svc.settings.lead_ms
    fired = 0
    while True:  # drain what is due, leaving a margin before the function's timeout
        if lead:
            n = svc.engine.fire_timers(svc.clock.now_ms(), BATCH, lead)
        else:
            n = svc.engine.fire_timers(svc.clock.now_ms() - SKEW_MS, BATCH)
        fired += n
        if n < BATCH or context.get_remaining_time_in_millis() < 10_000:
            break
    swept = 0
    while context.get_remaining_time_in_millis() >= 10_000:  # a batch at a time, oldest first
        n = svc.engine.sweep_young(limit=SWEEP_BATCH)  # each execution: a state load and its pins
        swept += n
        if n < SWEEP_BATCH:
            break
    metrics.add_metric(name="TimersFired", unit=MetricUnit.Count, value=fired)
    logger.info("timers fired", fired=fired, swept=swept, scheduled_time=event.get("time"))
    return {"fired": fired}
