"""moto's SQS with the local stack's speed fixes (`orbit.local.moto_speed`) answers as SQS does.

Visible, in-flight and delayed counts, receive order, deleting by a current or an
old receipt handle, and the error for an unknown handle, on virtual time: with every patch in,
with the speed fixes switched off (ORBIT_LOCAL_SPEED_PATCHES=0), and without the clock swap too
(what a moto the clock was not read from gets: virtual time moves the messages instead).
"""

from __future__ import annotations

import boto3
import moto
import pytest
from botocore.exceptions import ClientError
from orbit.local import clock, moto_speed, patches
from orbit.local.emulator import Emulator

MODES = ["patched", "speed-off", "unpatched"]


@pytest.fixture(params=MODES)
def sqs(request, monkeypatch):
    if request.param != "patched":
        monkeypatch.setenv(patches.SPEED_SWITCH, "0")
    if request.param == "unpatched":
        monkeypatch.setattr(clock, "moto_clock_supported", lambda: False)
    clock.reset()
    emulator = Emulator("inprocess")
    emulator.start()
    try:
        yield boto3.client("sqs")
    finally:
        emulator.stop()
        clock.reset()


def _counts(sqs, url: str) -> tuple[int, int, int]:
    a = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return (
        int(a["ApproximateNumberOfMessages"]),
        int(a["ApproximateNumberOfMessagesNotVisible"]),
        int(a["ApproximateNumberOfMessagesDelayed"]),
    )


def test_the_fixes_are_applied_on_the_moto_they_were_read_from(sqs, request):
    import moto.sqs.models as sqs_models
    from moto.core import utils

    mode = request.node.callspec.params["sqs"]
    speed = mode == "patched" and patches.speed_enabled() and moto.__version__ == moto_speed.MOTO_VERSION
    on_clock = mode != "unpatched" and clock.moto_clock_supported()
    assert patches.state() == {"clock": on_clock, "speed": speed}
    assert (sqs_models.unix_time_millis is utils.unix_time_millis) is not on_clock
    assert hasattr(sqs_models.SQSBackend.send_message, "original") is speed


def test_counts_receive_order_and_deletes_follow_virtual_time(sqs):
    url = sqs.create_queue(QueueName="q", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    for i in range(25):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{i}")
    sqs.send_message(QueueUrl=url, MessageBody="late", DelaySeconds=60)
    assert _counts(sqs, url) == (25, 0, 1)

    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in got] == [f"m{i}" for i in range(10)]
    assert _counts(sqs, url) == (15, 10, 1)

    entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got[:4])]
    sqs.delete_message_batch(QueueUrl=url, Entries=entries)
    assert _counts(sqs, url) == (15, 6, 1)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"])  # again: accepted, no change
    assert _counts(sqs, url) == (15, 6, 1)

    clock.advance_ms(31_000)  # the six kept in flight are visible again; "late" still delayed
    assert _counts(sqs, url) == (21, 0, 1)
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in again][:6] == [f"m{i}" for i in range(4, 10)]
    # a handle from the earlier reception still names the message (moto keeps old handles)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=got[4]["ReceiptHandle"])
    assert _counts(sqs, url) == (11, 9, 1)

    clock.advance_ms(30_000)
    assert _counts(sqs, url)[2] == 0  # "late" is due
    with pytest.raises(ClientError) as err:
        sqs.delete_message(QueueUrl=url, ReceiptHandle="not-a-receipt-handle")
    assert err.value.response["Error"]["Code"] == "ReceiptHandleIsInvalid"
