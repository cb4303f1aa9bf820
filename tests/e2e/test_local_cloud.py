"""The local stack's event source mapping, redrive and schedule semantics, with a toy handler."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from orbit.local import clock
from orbit.local.cfn import TemplateError
from orbit.local.runner import LocalCloud

TOY = Path(__file__).parent / "toy" / "template.yaml"


@pytest.fixture
def cloud():
    clock.reset()
    c = LocalCloud(TOY, mode="inprocess", stack_name="toy")
    c.start()
    yield c
    c.stop()


def _app(cloud: LocalCloud) -> dict:
    return cloud.handlers["Worker"].__globals__


def _depth(url: str) -> dict[str, int]:
    attrs = boto3.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return {
        "visible": int(attrs["ApproximateNumberOfMessages"]),
        "inflight": int(attrs["ApproximateNumberOfMessagesNotVisible"]),
    }


def test_resources_follow_the_template(cloud):
    dep = cloud.deployment
    work = dep.queues["WorkQueue"]
    assert (work.visibility_timeout, work.max_receive_count) == (45, 3)
    assert work.dlq_arn == dep.queues["WorkDLQ"].arn
    table = boto3.client("dynamodb").describe_table(TableName=dep.tables["Table"])["Table"]
    assert [k["AttributeName"] for k in table["KeySchema"]] == ["pk"]
    assert [g["IndexName"] for g in table["GlobalSecondaryIndexes"]] == ["byg"]
    assert dep.functions["Worker"].env["TOY_GREETING"] == "hello-toy"
    assert dep.functions["Worker"].env["TOY_QUEUE_URL"] == work.url


def test_partial_batch_failure_is_redelivered_after_the_visibility_timeout(cloud):
    url = cloud.deployment.queues["WorkQueue"].url
    sqs = boto3.client("sqs")
    for body in ("a", "fail-once-b", "c"):
        sqs.send_message(QueueUrl=url, MessageBody=body)
    cloud.run_until_idle()
    seen = _app(cloud)["SEEN"]
    assert sorted(s["body"] for s in seen) == ["a", "c", "fail-once-b"]
    assert seen[0]["arn"] == cloud.deployment.queues["WorkQueue"].arn
    assert seen[0]["context"] == "Worker" and seen[0]["greeting"] == "hello-toy"
    # the successes were deleted; the failure stays in flight until its visibility timeout
    assert _depth(url) == {"visible": 0, "inflight": 1}
    cloud.advance(44)
    cloud.run_until_idle()
    assert len(seen) == 3
    cloud.advance(2)
    cloud.run_until_idle()
    assert [(s["body"], s["count"]) for s in seen[3:]] == [("fail-once-b", 2)]
    assert _depth(url) == {"visible": 0, "inflight": 0}


def test_poison_message_moves_to_the_dlq_after_max_receive_count(cloud):
    queues = cloud.deployment.queues
    boto3.client("sqs").send_message(QueueUrl=queues["WorkQueue"].url, MessageBody="poison")
    cloud.run_until_idle(auto_advance=True, max_skip_ms=3_600_000)
    counts = [s["count"] for s in _app(cloud)["SEEN"]]
    assert counts == [1, 2, 3]
    assert _depth(queues["WorkQueue"].url) == {"visible": 0, "inflight": 0}
    dlq = boto3.client("sqs").receive_message(QueueUrl=queues["WorkDLQ"].url).get("Messages", [])
    assert [m["Body"] for m in dlq] == ["poison"]


def test_schedule_fires_on_virtual_time_and_coalesces_missed_ticks(cloud):
    ticks = cloud.handlers["Ticker"].__globals__["TICKS"]
    cloud.run_until_idle()
    assert ticks == []
    cloud.advance(5 * 60)
    cloud.run_until_idle()
    assert len(ticks) == 1 and ticks[0]["detail-type"] == "Scheduled Event"
    cloud.advance(7 * 24 * 3600)
    cloud.run_until_idle()
    assert len(ticks) == 2


def test_handler_exception_leaves_the_whole_batch(cloud):
    url = cloud.deployment.queues["WorkQueue"].url
    boto3.client("sqs").send_message(QueueUrl=url, MessageBody="x")
    cloud.handlers["Worker"].__globals__["SEEN"] = None  # the handler now raises (TypeError)
    cloud.run_until_idle()
    assert _depth(url) == {"visible": 0, "inflight": 1}
    assert cloud.errors and cloud.errors[0][0] == "Worker"


def test_unknown_ref_names_the_place(tmp_path):
    bad = tmp_path / "t.yaml"
    bad.write_text(TOY.read_text().replace("!Ref WorkQueue", "!Ref NoSuchQueue"))
    (tmp_path / "fn").mkdir()
    c = LocalCloud(bad, mode="inprocess")
    where = "Worker.Properties.Environment.Variables.TOY_QUEUE_URL.*NoSuchQueue"
    with pytest.raises(TemplateError, match=where):
        c.start()


def test_messages_past_retention_are_dropped_and_do_not_block_the_queue(cloud):
    url = cloud.deployment.queues["WorkQueue"].url
    sqs = boto3.client("sqs")
    sqs.send_message(QueueUrl=url, MessageBody="old", DelaySeconds=900)  # not visible before it expires
    cloud.advance(5 * 86_400)  # past the default 4-day retention period
    sqs.send_message(QueueUrl=url, MessageBody="new")
    cloud.run_until_idle()
    assert [s["body"] for s in _app(cloud)["SEEN"]] == ["new"]
    assert _depth(url) == {"visible": 0, "inflight": 0}
