"""Create template.yaml's table, queues, bucket and hook secret on moto (one schema source: the template)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "template"))

import sam
from orbit.local.resources import lifecycle_rules

_TEMPLATE = sam.load_template()


class Clients:
    """Session-wide clients (creating one costs 50-200 ms)."""

    def __init__(self) -> None:
        import boto3
        from botocore.config import Config

        self.dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        self.sqs = boto3.client("sqs", region_name="us-east-1")
        self.secretsmanager = boto3.client("secretsmanager", region_name="us-east-1")
        # As orbit.aws.wiring configures it (no per-upload CRC32: payloads are content-addressed).
        self.s3 = boto3.client("s3", region_name="us-east-1", config=Config(
            request_checksum_calculation="when_required", response_checksum_validation="when_required"))


@dataclass
class Stack:
    table: str
    bucket: str
    queues: dict[str, str] = field(default_factory=dict)  # logical id -> url
    arns: dict[str, str] = field(default_factory=dict)  # logical id -> arn
    hook_secret_arn: str = ""

    def env(self) -> dict[str, str]:
        """What template.yaml's Globals give every function."""
        return {
            "ORBIT_TABLE": self.table,
            "ORBIT_BUCKET": self.bucket,
            "ORBIT_DECISION_QUEUE_URL": self.queues["DecisionQueue"],
            "ORBIT_DEFAULT_TASK_QUEUE_URL": self.queues["DefaultTaskQueue"],
            "ORBIT_TASK_QUEUES": json.dumps({"default": self.queues["DefaultTaskQueue"],
                                             "http": self.queues["HttpTaskQueue"]}),
            "POWERTOOLS_SERVICE_NAME": "orbit",
            "POWERTOOLS_METRICS_NAMESPACE": "Orbit",
            "ORBIT_HOOK_SECRET_ARN": self.hook_secret_arn,
            # triggers (docs/triggers.md): what the triggers function trusts, where refusals go
            "ORBIT_TRIGGER_QUEUE_ARN": self.arns.get("TriggerQueue", ""),
            "ORBIT_TRIGGER_QUEUE_URL": self.queues.get("TriggerQueue", ""),
            "ORBIT_TRIGGER_DLQ_URL": self.queues.get("TriggerDLQ", ""),
        }


def create_stack(ddb: Any, sqs: Any, s3: Any, suffix: str = "") -> Stack:
    res = _TEMPLATE["Resources"]
    props = res["OrbitTable"]["Properties"]
    table = f"orbit{suffix}"
    ddb.create_table(
        TableName=table, BillingMode="PAY_PER_REQUEST", AttributeDefinitions=props["AttributeDefinitions"],
        KeySchema=props["KeySchema"], GlobalSecondaryIndexes=props["GlobalSecondaryIndexes"],
    )
    bucket = f"orbit-payloads{suffix}".lower()
    s3.create_bucket(Bucket=bucket)
    rules = lifecycle_rules(res["PayloadBucket"]["Properties"])
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules})
    stack = Stack(table, bucket)
    import secrets

    import boto3

    # HookSecret: a generated string, as GenerateSecretString makes on AWS
    stack.hook_secret_arn = boto3.client("secretsmanager", region_name="us-east-1").create_secret(
        Name=f"orbit-hook-secret{suffix}", SecretString=secrets.token_urlsafe(48))["ARN"]
    queues = {k: v["Properties"] for k, v in res.items() if v["Type"] == "AWS::SQS::Queue"}
    # DLQs first: the main queues' redrive policies point at them.
    for lid in sorted(queues, key=lambda k: "RedrivePolicy" in queues[k]):
        q = queues[lid]
        attrs = {"VisibilityTimeout": str(q.get("VisibilityTimeout", 30))}
        if "RedrivePolicy" in q:
            dlq = q["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
            attrs["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": stack.arns[dlq],
                                                 "maxReceiveCount": q["RedrivePolicy"]["maxReceiveCount"]})
        url = sqs.create_queue(QueueName=f"{lid}{suffix}", Attributes=attrs)["QueueUrl"]
        stack.queues[lid] = url
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
        stack.arns[lid] = attrs["QueueArn"]
    return stack


@contextmanager
def mocked_services(env: dict[str, str] | None = None) -> Iterator[tuple[Clients, Stack, Any]]:
    """A moto account with the template's resources and `orbit.aws.wiring.services()` built on them, for the
    benchmarks: (the harness's own clients, the stack, the services); services are reset on exit.
    `env`: more settings (e.g. ORBIT_ARCHIVE_DAYS), removed again on exit."""
    from moto import mock_aws
    from orbit.aws import wiring as aws

    with mock_aws():
        clients = Clients()
        stack = create_stack(clients.dynamodb, clients.sqs, clients.s3)
        os.environ.update({**stack.env(), **(env or {})})
        aws.reset()
        try:
            yield clients, stack, aws.services()
        finally:
            for name in env or {}:
                os.environ.pop(name, None)
            aws.reset()
