"""orbit.aws.wiring reads the environment in one place and says exactly what is wrong with it."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws
from orbit.aws.wiring import Settings, build_services
from orbit.errors import ValidationError

GOOD = {"ORBIT_TABLE": "t", "ORBIT_BUCKET": "b", "ORBIT_DECISION_QUEUE_URL": "https://sqs/decisions",
        "ORBIT_DEFAULT_TASK_QUEUE_URL": "https://sqs/default",
        "ORBIT_TASK_QUEUES": '{"http": "https://sqs/http"}', "AWS_REGION": "eu-west-1"}


def test_every_problem_is_named() -> None:
    env = {"ORBIT_TASK_QUEUES": "[1]", "ORBIT_TIMERS": "cron", "ORBIT_SNAPSHOT_EVERY": "0"}
    with pytest.raises(ValidationError) as info:
        Settings.from_env(env)
    paths = sorted(p.path for p in info.value.problems)
    assert paths == ["ORBIT_BUCKET", "ORBIT_DECISION_QUEUE_URL", "ORBIT_SNAPSHOT_EVERY", "ORBIT_TABLE",
                     "ORBIT_TASK_QUEUES", "ORBIT_TIMERS"]


def test_settings_and_queue_routing() -> None:
    s = Settings.from_env({**GOOD, "AWS_ENDPOINT_URL": "http://127.0.0.1:5000"})
    assert (s.region, s.endpoint_url, s.timers, s.snapshot_every) == ("eu-west-1", "http://127.0.0.1:5000",
                                                                      "sqs-delay", 25)
    with mock_aws():  # an unmapped queue name is looked up in the table's app routes (none here)
        boto3.client("dynamodb", region_name="eu-west-1").create_table(
            TableName="t", BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                       {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                  {"AttributeName": "sk", "AttributeType": "S"}])
        svc = build_services(GOOD)
        assert svc.queues.task_url("http") == "https://sqs/http"
        assert svc.queues.task_url("inventory") == "https://sqs/default"  # unmapped: the default queue
    assert type(svc.timers).__name__ == "DelayedWakeTimers"
    assert type(build_services({**GOOD, "ORBIT_TIMERS": "table"}).timers).__name__ == "DynamoTimers"
