"""In-process moto: DynamoDB and SQS requests go unsigned; S3, presigned URLs and server mode do not.
The unsigned requests are a speed fix: with the speed fixes off (ORBIT_LOCAL_SPEED_PATCHES=0, another
moto) every request is signed, as botocore signs it, and answered the same."""

from __future__ import annotations

import boto3
from botocore.handlers import BUILTIN_HANDLERS
from orbit.local import patches, unsigned
from orbit.local.emulator import Emulator


def _authorization(client, call) -> list:
    seen: list = []
    client.meta.events.register("before-send", lambda request, **_: seen.append(
        request.headers.get("Authorization")), unique_id="test-auth")
    call()
    return seen


def test_in_process_dynamodb_and_sqs_are_unsigned_and_behave_the_same():
    e = Emulator("inprocess")
    e.start()
    signs_none = patches.state()["speed"]
    assert (("choose-signer", unsigned._choose_unsigned) in BUILTIN_HANDLERS) is signs_none
    try:
        session = boto3.session.Session()
        ddb, sqs, s3 = (session.client(s, region_name="us-east-1") for s in ("dynamodb", "sqs", "s3"))
        ddb.create_table(TableName="t", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                         BillingMode="PAY_PER_REQUEST")
        put = _authorization(ddb, lambda: ddb.put_item(
            TableName="t", Item={"pk": {"S": "a"}}, ConditionExpression="attribute_not_exists(pk)"))
        assert (put == [None]) is signs_none and len(put) == 1
        assert ddb.get_item(TableName="t", Key={"pk": {"S": "a"}})["Item"] == {"pk": {"S": "a"}}
        url = sqs.create_queue(QueueName="q")["QueueUrl"]
        sent = _authorization(sqs, lambda: sqs.send_message(QueueUrl=url, MessageBody="m"))
        assert (sent == [None]) is signs_none
        assert sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "m"
        s3.create_bucket(Bucket="orbit-unsigned-test")
        signed = _authorization(s3, lambda: s3.put_object(Bucket="orbit-unsigned-test", Key="k", Body=b"1"))
        assert signed and signed[0] is not None  # S3 stays signed: moto would treat it as anonymous
        assert "Signature=" in s3.generate_presigned_url(
            "get_object", Params={"Bucket": "orbit-unsigned-test", "Key": "k"})
    finally:
        e.stop()
    assert unsigned._choose_unsigned(signing_name="dynamodb", signature_version="v4") is None
    assert ("choose-signer", unsigned._choose_unsigned) not in BUILTIN_HANDLERS  # botocore's list given back
