"""The worker SDK (`from orbit.worker import task`): `sdk` runs tasks, `runtime` meets SQS,
`heartbeat` throttles. Imports the core and, lazily, `orbit.aws.wiring`; never the service.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from orbit.worker.sdk import TaskBusy, TaskContext, Worker
from orbit.worker.tasks import TaskFunction, registered_tasks, task

__all__ = ["TaskBusy", "TaskContext", "TaskFunction", "Worker", "handler", "registered_tasks", "run", "task"]


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda handler for a worker queue (SQS event source with ReportBatchItemFailures)."""
    from orbit.worker.runtime import lambda_batch

    return lambda_batch(event, context)


def run(queue: str = "default", *, env: Mapping[str, str] | None = None, wait_s: int = 20,
        max_messages: int = 10, visibility_s: int = 300, stop: threading.Event | None = None,
        max_polls: int | None = None) -> int:
    """Long-poll a worker queue (a name from ORBIT_TASK_QUEUES, or a URL) outside Lambda.

    Returns how many messages were handled; stops when `stop` is set or after `max_polls`
    receives. See orbit.worker.runtime.poll.
    """
    from orbit.worker.runtime import poll

    return poll(queue, env=env, wait_s=wait_s, max_messages=max_messages, visibility_s=visibility_s,
                stop=stop, max_polls=max_polls)
