"""An sqs trigger's queue is checked at registration, before the definition is stored
(docs/triggers.md, "SQS"): on moto, through the API's route and the AWS wiring (the triggers
function's ARN and TriggerQueueNamePrefix set as template.yaml sets them). A queue that does not
exist, one outside the prefix, or one in another region is refused with one line naming the trigger
and its field, and the workflow is not registered: nothing to retire, no mapping made."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.aws import wiring as aws
from orbit.errors import UnknownWorkflow
from orbit.service.http import handle_request

FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:orbit-triggers"


def _definition(arn: str) -> dict[str, Any]:
    return {"orbit": 1, "name": "jobs-wf", "version": "1", "steps": {"a": {"compute": "{% input %}"}},
            "triggers": {"jobs": {"sqs": {"queue_arn": arn}, "id": "{% 'j-' & body.id %}"}}}


@pytest.fixture
def engine(cloud: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("ORBIT_TRIGGERS_FUNCTION_ARN", FUNCTION)
    monkeypatch.setenv("ORBIT_TRIGGER_QUEUE_NAME_PREFIX", "orbit-trigger-")
    aws.reset(clock=aws.services().clock)
    return aws.services().engine


def _registered(engine: Any) -> list[str]:
    return [w["name"] for w in engine.workflows()]


@pytest.mark.parametrize(("arn", "why"), [
    ("arn:aws:sqs:us-east-1:123456789012:orbit-trigger-missing", "the queue does not exist: create it first"),
    ("arn:aws:sqs:us-east-1:123456789012:jobs", "Orbit may read only queues whose names start with "
                                                 "'orbit-trigger-'"),
    ("arn:aws:sqs:eu-west-1:123456789012:orbit-trigger-jobs", "the queue is in eu-west-1/123456789012"),
])
def test_a_queue_orbit_cannot_read_is_refused_before_the_definition_is_stored(
    engine: Any, arn: str, why: str
) -> None:
    status, body = handle_request(engine, "POST", "/definitions", _definition(arn))
    assert status == 400, body
    message = body["error"]["message"]
    assert message.startswith(f"triggers.jobs.sqs.queue_arn: trigger 'jobs' names queue {arn}: {why}"), \
        message
    assert "\n" not in message and message.endswith("nothing was registered")
    assert "jobs-wf" not in _registered(engine)  # before the fix: stored, then the mapping failed
    with pytest.raises(UnknownWorkflow):
        engine.registry.get("jobs-wf", None)


def test_control_a_queue_that_exists_under_the_prefix_passes_the_check(engine: Any, cloud: Any) -> None:
    from orbit.core.definition import parse_definition
    from orbit.service.trigger_checks import check_trigger_sources

    url = cloud.sqs.create_queue(QueueName="orbit-trigger-jobs")["QueueUrl"]
    arn = cloud.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    assert engine.trigger_sources.queue_problem(arn) is None
    check_trigger_sources(engine, parse_definition(_definition(arn)))  # raises nothing
