"""moto fixtures: clients built once per session, a fresh mock (and stack) per test.

Creating boto3 clients costs 50-200 ms each (LOCAL-AWS-FACTS); moto intercepts
every client created after it is imported, so session clients work across
per-test `mock_aws` contexts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                   "AWS_SECURITY_TOKEN": "testing", "AWS_SESSION_TOKEN": "testing",
                   "AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "1",
                   "POWERTOOLS_METRICS_NAMESPACE": "Orbit", "POWERTOOLS_SERVICE_NAME": "orbit"})
os.environ.pop("AWS_ENDPOINT_URL", None)

from aws_resources import Clients, Stack, create_stack
from moto import mock_aws


@pytest.fixture(scope="session")
def clients() -> Clients:
    return Clients()


@pytest.fixture
def stack(clients: Clients) -> Iterator[Stack]:
    with mock_aws():
        yield create_stack(clients.dynamodb, clients.sqs, clients.s3)


class ManualClock:
    def __init__(self, now_ms: int = 1_767_225_600_000) -> None:  # 2026-01-01T00:00:00Z
        self.now = now_ms

    def now_ms(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def receive_all(sqs: Any, url: str, max_rounds: int = 20) -> list[dict[str, Any]]:
    """Every visible message of a queue (moto returns at most 10 per call)."""
    out: list[dict[str, Any]] = []
    for _ in range(max_rounds):
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                  AttributeNames=["All"]).get("Messages", [])
        if not got:
            break
        out += got
    return out


@pytest.fixture
def cloud(stack: Stack, clients: Clients, clock: ManualClock,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The stack's environment in place and orbit.aws.wiring rebuilt on it, with a manual clock."""
    from harness import Cloud
    from orbit.aws import wiring as aws

    for key, value in stack.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ORBIT_TIMERS", "table")  # timers fire when the test advances the clock
    aws.reset(clock=clock)
    # Reuse the session's clients (building three per test would cost more than the tests).
    aws.services().__dict__.update(dynamodb=clients.dynamodb, sqs=clients.sqs, s3=clients.s3)
    try:
        yield Cloud(stack, clients.sqs)
    finally:
        aws.reset()
