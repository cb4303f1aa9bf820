"""moto with the request-building fixes (`orbit.local.moto_speed_requests`, and `Item.__init__` in
`moto_speed_dynamodb`) answers as moto's own code: the same inputs go through the fixed and the original
functions and what comes out is compared."""

from __future__ import annotations

import pytest

# Older moto has no moto.core.parse / request / serialize (the 5.0 and 5.1.0 wheels have none): the
# fixes below replace code it does not have, so there is nothing to compare. On every moto that has
# them these tests run, with the fixes or (another version, ORBIT_LOCAL_SPEED_PATCHES=0) without.
for _needed in ("moto.core.parse", "moto.core.request", "moto.core.serialize"):
    pytest.importorskip(_needed)

import datetime  # noqa: E402
import json  # noqa: E402
from typing import Any  # noqa: E402

import moto.core.responses as responses  # noqa: E402
from botocore.awsrequest import AWSPreparedRequest  # noqa: E402
from moto.core.parse import BaseJSONParser, JSONParser  # noqa: E402
from moto.core.request import Request  # noqa: E402
from moto.core.serialize import ResponseSerializer  # noqa: E402
from moto.dynamodb.models import dynamo_type  # noqa: E402
from moto_speed_table import inprocess_table, orig, speed_applied  # noqa: E402
from orbit.local import patches  # noqa: E402
from test_local_moto_speed_calls import dynamodb_answers, sqs_answers, without_volatile  # noqa: E402


@pytest.fixture(autouse=True)
def fixes_installed() -> Any:
    """As an emulator's start applies them (clock first), for the tests that start none."""
    with patches.applied():
        yield

DDB = "https://dynamodb.us-east-1.amazonaws.com/"
JSON_HEADERS = {"X-Amz-Target": b"DynamoDB_20120810.GetItem", "Content-Type": b"application/x-amz-json-1.0",
                "User-Agent": b"Boto3/1 md/Botocore#1", "amz-sdk-invocation-id": b"5474344f",
                "amz-sdk-request": b"attempt=1; max=4", "Content-Length": "45"}
REQUESTS: list[tuple[str, str, dict[str, Any], Any]] = [
    ("POST", DDB, JSON_HEADERS, b'{"TableName": "t", "Key": {"pk": {"S": "x"}}}'),
    ("POST", "https://sqs.us-east-1.amazonaws.com/",
     {**JSON_HEADERS, "X-Amz-Target": "AmazonSQS.SendMessage", "Content-Type": "application/x-amz-json-1.0"},
     b'{"a": 1}'),
    ("POST", DDB, {"Content-Type": "text/plain", "content-length": "3", "X-Dup": "a", "x-dup": "b",
                   "Transfer-Encoding": "chunked", "x-amz-meta-my_key": "v", "Host": "elsewhere:8080"},
     b"abc"),
    ("POST", "http://localhost:5000/a/b%20c?x=1&y=%2F", {"User-Agent": "u"}, b"\x00\xff body"),  # no type
    ("PUT", "https://bucket.s3.amazonaws.com/k%2Fey?uploads", {"Content-Type": "application/xml"}, b"<a/>"),
    ("POST", DDB, {"Content-Type": "application/x-www-form-urlencoded"}, b"Action=List&x=%20"),
    ("POST", DDB, JSON_HEADERS, b""),  # empty body: moto's own code
    ("GET", "https://sqs.us-east-1.amazonaws.com/123456789012/q?Action=ListQueues", {}, None),
    ("POST", DDB, {"X-Bad": "a\r\nb"}, b"x"),  # werkzeug refuses a newline in a header value
]


def built(make: Any, method: str, url: str, headers: dict[str, Any], body: Any) -> Any:
    try:
        request = make(method, url, AWSPreparedRequest(method, url, headers, body, False).headers, body)
    except Exception as e:  # noqa: BLE001 - the same failure is the same answer
        return type(e).__name__, str(e)
    env = dict(request.environ)
    env.pop("werkzeug.request")
    env["wsgi.input"] = env["wsgi.input"].getvalue()
    lazily_kept = {"url_root", "root_url"}  # werkzeug keeps these on first use; prefilled or not, the same
    return (list(env.items()), type(request), request.url_root, request.raw_url, request.data,
            list(request.headers), request.form, request.content_type, request.host,
            request.__dict__.keys() - lazily_kept)


@pytest.mark.parametrize("method,url,headers,body", REQUESTS)
def test_requests_are_built_with_moto_s_environ_and_answers(method: str, url: str, headers: dict[str, Any],
                                                            body: Any) -> None:
    with inprocess_table():
        fast, slow = Request.from_primitives, orig(Request.from_primitives)
        for _ in range(2):  # the second time from the kept URL part
            assert built(fast, method, url, headers, body) == built(slow, method, url, headers, body)


def test_whole_answers_match_moto_s_with_the_request_fixes_off(monkeypatch: pytest.MonkeyPatch) -> None:
    with inprocess_table() as db:
        import boto3

        sqs = boto3.client("sqs", region_name="us-east-1")
        fixed = [dynamodb_answers(db, run) for run in (1, 2)]  # the second run from the kept URL and shapes
        fixed_sqs = sqs_answers(sqs, "fixed")
        monkeypatch.setattr(Request, "from_primitives", orig(Request.from_primitives))
        monkeypatch.setattr(responses, "http_date", orig(responses.http_date))
        monkeypatch.setattr(responses.BaseResponse, "_enrich_response",
                            staticmethod(orig(responses.BaseResponse._enrich_response)))
        monkeypatch.setattr(BaseJSONParser, "_parse_structure", orig(BaseJSONParser._parse_structure))
        monkeypatch.setattr(BaseJSONParser, "_parse_shape", orig(BaseJSONParser._parse_shape))
        monkeypatch.setattr(ResponseSerializer, "_serialize_type_structure",
                            orig(ResponseSerializer._serialize_type_structure))
        monkeypatch.setattr(dynamo_type.Item, "__init__", orig(dynamo_type.Item.__init__))
        import moto.dynamodb.responses as r

        monkeypatch.setattr(r, "validate_put_has_empty_attrs", orig(r.validate_put_has_empty_attrs))
        original = [dynamodb_answers(db, run) for run in (3, 4)]
        assert sqs_answers(sqs, "original") == fixed_sqs

    def same_shape(answers: list[Any], run: int) -> str:
        return repr(without_volatile(answers)).replace(f"EXEC#{run}", "EXEC#?")

    assert [same_shape(a, r) for a, r in zip(fixed, (1, 2))] == [
        same_shape(a, r) for a, r in zip(original, (3, 4))]
    assert fixed[0][1][0] == "ConditionalCheckFailedException"  # the refusals are still there


def test_the_date_header_is_moto_s_to_the_second() -> None:
    with inprocess_table():
        fast, slow = responses.http_date, orig(responses.http_date)
        base = datetime.datetime(2026, 12, 1, 23, 59, 58, 999_999)
        for step in range(0, 3_000_000, 250_001):  # across second, minute, hour and day boundaries
            moment = base + datetime.timedelta(microseconds=step)
            assert fast(moment) == slow(moment)
        aware = base.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
        for other in (aware, 1_700_000_000, None, datetime.date(2026, 1, 2)):
            assert fast(other) == slow(other) if other is not None else isinstance(fast(None), str)


@pytest.mark.parametrize("body", ['{"a": 1}', "<R><RequestId>old</RequestId></R>", b"bytes", "", None,
                                  "<RequestId>a</RequestId><RequestId>b</RequestId>"])
def test_request_ids_are_put_where_moto_puts_them(body: Any) -> None:
    fast, slow = responses.BaseResponse._enrich_response, orig(responses.BaseResponse._enrich_response)

    def answer(enrich: Any) -> Any:
        headers, out = enrich({"status": 201}, body)
        request_id = headers.pop("x-amzn-requestid")  # drawn afresh each time: compared by where it goes
        assert len(request_id) == 52
        return headers, out.replace(request_id, "<id>") if isinstance(out, str) else out

    assert answer(fast) == answer(slow)
    assert answer(fast)[0] == {"status": "201"}


ITEM = {"pk": {"S": "EXEC#a"}, "sk": {"S": "C#1"}, "n": {"N": "12.50"}, "b": {"B": "AHp6"},
        "ss": {"SS": ["b", "a"]}, "t": {"BOOL": False}, "nil": {"NULL": True}, "é": {"S": "ü" * 3},
        "m": {"M": {"inner": {"L": [{"S": "x"}, {"N": "1"}, {"M": {}}]}, "e": {"S": ""}}}}


def test_the_json_parser_gives_moto_s_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.core.responses import get_service_model

    cases = [("dynamodb", "PutItem", {"TableName": "t", "Item": ITEM, "ConditionExpression": "x",
                                      "ExpressionAttributeValues": {":u": {"N": "1"}}, "Unknown": 1}),
             ("dynamodb", "Query", {"TableName": "t", "Limit": 3, "ExclusiveStartKey": None}),
             ("sqs", "SendMessageBatch", {"QueueUrl": "q", "Entries": [
                 {"Id": "0", "MessageBody": "b", "DelaySeconds": 4,
                  "MessageAttributes": {"a": {"DataType": "Binary", "BinaryValue": "AHp6"}}}]}),
             ("sqs", "ReceiveMessage",
              {"QueueUrl": "q", "MaxNumberOfMessages": 10, "AttributeNames": ["All"]})]
    with inprocess_table():
        for service, operation, params in cases:
            model = get_service_model(service).operation_model(operation)
            request = {"method": "POST", "values": {}, "headers": {}, "body": json.dumps(params).encode(),
                       "url_path": "/", "url_params": {}}
            fast = [JSONParser(model).parse(request) for _ in range(2)]
            with monkeypatch.context() as m:
                m.setattr(BaseJSONParser, "_parse_structure", orig(BaseJSONParser._parse_structure))
                m.setattr(BaseJSONParser, "_parse_shape", orig(BaseJSONParser._parse_shape))
                slow = JSONParser(model).parse(request)
            assert fast == [slow, slow] and repr(fast[0]) == repr(slow), operation  # in the same order


def test_items_are_sized_and_refused_as_moto_sizes_them() -> None:
    Item, DynamoType = dynamo_type.Item, dynamo_type.DynamoType

    def make(init: Any, attrs: dict[str, Any]) -> Any:
        item = Item.__new__(Item)
        try:
            init(item, DynamoType(attrs["pk"]), DynamoType(attrs["sk"]), attrs)
        except Exception as e:  # noqa: BLE001 - the same failure is the same answer
            return type(e).__name__
        return type(item.attrs), list(item.attrs.items()), item.size(), item.to_json()

    fast, slow = Item.__init__, orig(Item.__init__)
    big = {"pk": {"S": "p"}, "sk": {"S": "s"}, "a": {"S": "x" * 200_000}}
    for attrs in (ITEM, big, {**big, "b": {"S": "y" * 204_990}}, {**big, "b": {"S": "y" * 204_999}},
                  {**big, "c": {"B": "z" * 300_000}}, {**big, "ü" * 5000: {"N": "1" * 38}}):
        assert make(fast, attrs) == make(slow, attrs)
    assert make(fast, {**big, "b": {"S": "y" * 204_999}}) == "ItemSizeTooLarge"
    assert make(fast, {**big, "b": {"S": "y" * 204_990}})[2] > 400_000  # just under moto's limit: kept


def test_empty_sets_are_refused_as_moto_refuses_them() -> None:
    import moto.dynamodb.responses as r

    fast, slow = r.validate_put_has_empty_attrs, orig(r.validate_put_has_empty_attrs)
    with inprocess_table() as db:
        from moto.dynamodb.models import dynamodb_backends

        db.put_item(TableName="t", Item={"pk": {"S": "a"}, "sk": {"S": "b"}})
        table = dynamodb_backends["123456789012"]["us-east-1"].get_table("t")

        def outcome(check: Any, item: dict[str, Any]) -> Any:
            try:
                return check(item, table)
            except Exception as e:  # noqa: BLE001 - the same failure is the same answer
                return type(e).__name__, str(e)

        for item in (ITEM, {"pk": {"SS": []}}, {"x": {"NS": []}}, {"x": {"SS": []}, "y": {"NS": []}},
                     {"m": {"M": {"deep": {"M": {"s": {"SS": []}}}}}}, {"l": {"L": [{"NS": []}]}}, {}):
            assert outcome(fast, item) == outcome(slow, item)
        assert "string set  may not be empty" in outcome(fast, {"x": {"SS": []}})[1]
        assert fast({"x": {"SS": []}}, None) is None  # no table: nothing checked, as moto


def test_sends_read_content_based_deduplication_as_the_queue_attributes_give_it() -> None:
    import boto3
    import moto.sqs.models as m

    fast = m.SQSBackend.send_message
    with inprocess_table():
        sqs = boto3.client("sqs", region_name="us-east-1")
        queues = {"plain": {}, "f1.fifo": {"FifoQueue": "true", "ContentBasedDeduplication": "true"},
                  "f2.fifo": {"FifoQueue": "true", "ContentBasedDeduplication": "false"}}
        backend = m.sqs_backends["123456789012"]["us-east-1"]
        for name, attrs in queues.items():
            sqs.create_queue(QueueName=name, Attributes=attrs)
            queue = backend.get_queue(name)
            spelled = queue.attributes.get("ContentBasedDeduplication")
            if speed_applied():
                assert fast.content_based_deduplication(queue) == spelled
            else:
                assert fast is orig(fast)  # moto's own send_message
            fifo = {"f1.fifo": {"group_id": "g"}, "f2.fifo": {"group_id": "g", "deduplication_id": "d"}}
            group = fifo.get(name, {})
            sent = [send(backend, name, "same body", **group) for send in (fast, orig(fast))]
            assert [(s.deduplication_id, s.group_id, s.body) for s in sent] == [
                (sent[1].deduplication_id, sent[1].group_id, "same body")] * 2
        assert backend.get_queue("f1.fifo").messages[0].deduplication_id is not None  # the body's sha256
        for bad in ({"delay_seconds": 901}, {"delay_seconds": "x"}):
            outcomes = []
            for send in (fast, orig(fast)):
                try:
                    send(backend, "plain", "b", **bad)
                except Exception as e:  # noqa: BLE001 - the same failure is the same answer
                    outcomes.append((type(e).__name__, str(e)))
            assert outcomes[0] == outcomes[1] and len(outcomes) == 2
