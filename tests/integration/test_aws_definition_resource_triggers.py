"""A definition with triggers deployed as an app's `Custom::OrbitDefinition` (docs/triggers.md,
docs/deploying.md): on moto, through DefinitionsFunction's handler (orbit/aws/definition_resource.py)
with the environment template.yaml gives it, its answer PUT to a real local HTTP endpoint.

Create makes the trigger's EventBridge rule and the triggers function's SQS mapping; Delete removes
both. moto does not enforce IAM, so every AWS request the handler makes is recorded and checked
against DefinitionsRole in template.yaml (with the managed policies it attaches): before the role
attached TriggerRegistrationPolicy, that check failed on `sqs:GetQueueUrl`, as AWS refused it.
"""

from __future__ import annotations

import io
import json
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import boto3
import botocore.client
import pytest
from test_aws_policies import actions, grants, template_roles

PREFIX = "orbit-t"
QUEUE_PREFIX = "orbit-trigger-"


class Answers:
    """CloudFormation's pre-signed ResponseURL: a real HTTP endpoint that keeps what is PUT."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        answers = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                size = int(self.headers.get("Content-Length", "0"))
                answers.bodies.append(json.loads(self.rfile.read(size)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/answer"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def answers() -> Iterator[Answers]:
    a = Answers()
    yield a
    a.server.shutdown()
    a.server.server_close()


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every AWS request made while the test runs: (service, operation)."""
    made: list[tuple[str, str]] = []
    real = botocore.client.BaseClient._make_api_call

    def recording(self: Any, operation: str, params: Any) -> Any:
        made.append((self.meta.service_model.service_name, operation))
        return real(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", recording)
    return made


def _triggers_function() -> str:
    """The stack's triggers function, as moto needs it to exist for a mapping."""
    iam = boto3.client("iam", region_name="us-east-1")
    role = iam.create_role(RoleName="triggers", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service": "lambda.amazonaws.com"}}]}))
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as z:
        z.writestr("app.py", "def handler(event, context):\n    return {}\n")
    fn = boto3.client("lambda", region_name="us-east-1").create_function(
        FunctionName="orbit-triggers", Runtime="python3.12", Role=role["Role"]["Arn"], Handler="app.handler",
        Code={"ZipFile": code.getvalue()})
    return str(fn["FunctionArn"])


@pytest.fixture
def deployed(cloud: Any, stack: Any, clients: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """DefinitionsFunction's environment: the Globals' trigger settings, as template.yaml sets them."""
    from orbit.aws import wiring as aws

    sqs = cloud.sqs
    dlq = sqs.get_queue_attributes(QueueUrl=stack.queues["TriggerDLQ"], AttributeNames=["QueueArn"])
    source = sqs.create_queue(QueueName=f"{QUEUE_PREFIX}jobs")["QueueUrl"]
    source_arn = sqs.get_queue_attributes(QueueUrl=source, AttributeNames=["QueueArn"])
    env = {"ORBIT_TRIGGER_DLQ_ARN": dlq["Attributes"]["QueueArn"], "ORBIT_TRIGGER_RULE_PREFIX": PREFIX,
           "ORBIT_TRIGGERS_FUNCTION_ARN": _triggers_function(),
           "ORBIT_TRIGGER_QUEUE_NAME_PREFIX": QUEUE_PREFIX, "ORBIT_APP_QUEUE_PREFIX": "orbit-app-"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    aws.reset(clock=aws.services().clock)
    aws.services().__dict__.update(dynamodb=clients.dynamodb, sqs=clients.sqs, s3=clients.s3)
    return {**env, "source_arn": source_arn["Attributes"]["QueueArn"]}


DEFINITION = """
orbit: 1
name: shop-orders
version: "1"
triggers:
  placed:
    eventbridge: {pattern: {source: [shop], detail-type: [OrderPlaced]}}
    id: "{% detail.order %}"
  jobs:
    sqs: {queue_arn: SOURCE}
    id: "{% 'j-' & body.id %}"
steps:
  a: {compute: "{% input %}"}
"""


def _request(kind: str, url: str, definition: str, physical: str | None = None) -> dict[str, Any]:
    event = {"RequestType": kind, "ResponseURL": url,
             "StackId": "arn:aws:cloudformation:us-east-1:1:stack/app/x", "RequestId": f"req-{kind}",
             "LogicalResourceId": "OrdersDefinition",
             "ResourceType": "Custom::OrbitDefinition",
             "ResourceProperties": {"ServiceToken": "arn:fn", "Definition": definition}}
    if physical:
        event["PhysicalResourceId"] = physical
    return event


def _state() -> tuple[list[str], list[str]]:
    """The trigger rules' descriptions and the mapped queues."""
    rules = boto3.client("events", region_name="us-east-1").list_rules(NamePrefix=PREFIX)["Rules"]
    mappings = boto3.client("lambda", region_name="us-east-1").list_event_source_mappings()[
        "EventSourceMappings"]
    return [r["Description"] for r in rules], [m["EventSourceArn"] for m in mappings]


def test_create_makes_the_rule_and_the_mapping_delete_removes_them_within_definitions_role(
        deployed: dict[str, str], answers: Answers, calls: list[tuple[str, str]]) -> None:
    from orbit.aws.definition_resource import handle

    text = DEFINITION.replace("SOURCE", deployed["source_arn"])
    calls.clear()
    created = handle(_request("Create", answers.url, text))
    handler_calls = list(calls)  # the handler's requests, not the checks' below
    assert created["Status"] == "SUCCESS", created["Reason"]
    assert answers.bodies[-1]["PhysicalResourceId"] == "shop-orders@1"
    assert _state() == (["orbit trigger shop-orders/placed"], [deployed["source_arn"]])

    calls.clear()
    deleted = handle(_request("Delete", answers.url, text, physical="shop-orders@1"))
    handler_calls += calls
    assert deleted["Status"] == "SUCCESS", deleted["Reason"]
    assert _state() == ([], [])

    # Every request of both, allowed by DefinitionsRole (moto does not enforce IAM).
    role = template_roles()["DefinitionsRole"]
    needed = {f"{service}:{op}" for service, op in handler_calls}
    assert {"events:PutRule", "lambda:CreateEventSourceMapping", "sqs:GetQueueUrl",
            "events:DeleteRule", "lambda:DeleteEventSourceMapping"} <= needed
    refused = sorted(a for a in needed if not any(a in actions(st) for st in grants(role)))
    assert not refused, f"DefinitionsRole may not {refused}"


def test_control_a_refused_queue_fails_the_resource_in_one_line_and_stores_nothing(
        deployed: dict[str, str], answers: Answers) -> None:
    from orbit.aws.definition_resource import handle
    from orbit.aws.wiring import services

    missing = deployed["source_arn"].replace("jobs", "missing")
    failed = handle(_request("Create", answers.url, DEFINITION.replace("SOURCE", missing)))
    assert failed["Status"] == "FAILED"
    assert "triggers.jobs.sqs.queue_arn" in failed["Reason"] and "\n" not in failed["Reason"]
    assert "does not exist" in failed["Reason"]
    assert "shop-orders" not in [w["name"] for w in services().engine.workflows()]
    assert _state() == ([], [])
