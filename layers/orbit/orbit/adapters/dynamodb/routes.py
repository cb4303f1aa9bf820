"""Task routes of apps deployed on their own stacks (`Custom::OrbitTaskQueue`, docs/deploying.md).

    ROUTE#<queue name> / ROUTE    {url}   the app's SQS queue that serves tasks `<queue name>.*`
    CFNREQ#<request id> / CFNREQ  {response}  a CloudFormation request answered (replays resend it)

A queue name the stack's ORBIT_TASK_QUEUES does not map is looked up here; a name no app routes
goes to the default task queue, as before. Lookups are cached `ttl_s` (hits and misses), so a
decider reads at most one item per unknown name per `ttl_s`; a new app's route is used by a warm
decider at most `ttl_s` after its stack created it (tasks dispatched before wait in the default
queue, put back there by its worker until their queue timeout).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from orbit.adapters.dynamodb.codec import s

ROUTE_TTL_S = 30.0
REQUEST_TTL_S = 7 * 86_400  # CloudFormation gives up on a custom resource after an hour


class TaskRoutes:
    def __init__(self, client: Any, table: str, ttl_s: float = ROUTE_TTL_S,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._db = client
        self.table = table
        self._ttl = ttl_s
        self._monotonic = monotonic
        self._cache: dict[str, tuple[str | None, float]] = {}
        self._lock = threading.Lock()

    def lookup(self, name: str) -> str | None:
        now = self._monotonic()
        with self._lock:
            hit = self._cache.get(name)
        if hit is not None and now - hit[1] < self._ttl:
            return hit[0]
        item = self._db.get_item(TableName=self.table, Key={"pk": s(f"ROUTE#{name}"), "sk": s("ROUTE")},
                                 ConsistentRead=True).get("Item")
        url = item["url"]["S"] if item else None
        with self._lock:
            self._cache[name] = (url, now)
        return url

    def put(self, name: str, url: str) -> None:
        self._db.put_item(TableName=self.table,
                          Item={"pk": s(f"ROUTE#{name}"), "sk": s("ROUTE"), "url": s(url)})
        with self._lock:
            self._cache[name] = (url, self._monotonic())

    def delete(self, name: str, url: str) -> None:
        """Remove the route if it still names `url` (another app may have taken the name since)."""
        try:
            self._db.delete_item(TableName=self.table, Key={"pk": s(f"ROUTE#{name}"), "sk": s("ROUTE")},
                                 ConditionExpression="#u = :u", ExpressionAttributeNames={"#u": "url"},
                                 ExpressionAttributeValues={":u": s(url)})
        except self._db.exceptions.ConditionalCheckFailedException:
            pass
        with self._lock:
            self._cache.pop(name, None)


class ResourceRequests:
    """CloudFormation requests answered, by RequestId: a replayed request resends its answer."""

    def __init__(self, client: Any, table: str, clock: Any) -> None:
        self._db = client
        self.table = table
        self._clock = clock

    def answered(self, request_id: str) -> dict[str, Any] | None:
        import json

        item = self._db.get_item(TableName=self.table, ConsistentRead=True,
                                 Key={"pk": s(f"CFNREQ#{request_id}"), "sk": s("CFNREQ")}).get("Item")
        return json.loads(item["response"]["S"]) if item else None

    def record(self, request_id: str, response: dict[str, Any]) -> None:
        import json

        expires = int(self._clock.now_ms() / 1000) + REQUEST_TTL_S
        self._db.put_item(TableName=self.table, Item={
            "pk": s(f"CFNREQ#{request_id}"), "sk": s("CFNREQ"), "response": s(json.dumps(response)),
            "expires_at": {"N": str(expires)}})
