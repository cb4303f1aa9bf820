"""moto with the per-request speed fixes (`orbit.local.moto_speed_calls`) answers as moto's own code:
the same requests run through the fixed and the original functions and the answers are compared."""

from __future__ import annotations

import pytest

# Older moto has no moto.core.parse / request / serialize (the 5.0 and 5.1.0 wheels have none): the
# fixes below replace code it does not have, so there is nothing to compare. On every moto that has
# them these tests run, with the fixes or (another version, ORBIT_LOCAL_SPEED_PATCHES=0) without.
for _needed in ("moto.core.parse", "moto.core.request", "moto.core.serialize"):
    pytest.importorskip(_needed)

import re  # noqa: E402
import string  # noqa: E402
from typing import Any  # noqa: E402

import boto3  # noqa: E402
import moto.core.botocore_stubber as stubber  # noqa: E402
import moto.core.serialize as ser  # noqa: E402
import moto.sqs.models as sqs_models  # noqa: E402
import moto.sqs.utils as sqs_utils  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
from moto.dynamodb.comparisons import ConditionExpressionParser  # noqa: E402
from moto.moto_api._internal.moto_random import MotoRandom  # noqa: E402
from moto_speed_table import inprocess_table, orig, speed_applied  # noqa: E402
from orbit.local import patches  # noqa: E402


@pytest.fixture(autouse=True)
def fixes_applied() -> Any:
    """As an emulator's start applies them, for the tests that start none."""
    with patches.applied():
        yield


@pytest.fixture
def aws() -> Any:
    with inprocess_table() as db:
        yield db, boto3.client("sqs", region_name="us-east-1")


ITEM = {"pk": {"S": "EXEC#a"}, "sk": {"S": "C#1"}, "g": {"S": "x"}, "n": {"N": "12.50"},
        "b": {"B": b"\x00zz"}, "ss": {"SS": ["b", "a"]}, "ns": {"NS": ["1", "2"]}, "t": {"BOOL": False},
        "nil": {"NULL": True},
        "m": {"M": {"inner": {"L": [{"S": "x"}, {"N": "1"}, {"M": {}}]}, "e": {"S": ""}}}}


def original_routing() -> Any:
    return orig(stubber.BotocoreStubber.process_request)


def dynamodb_answers(db: Any, run: int) -> list[Any]:
    """A run of every request shape Orbit sends, each answer without its request id."""
    pk = {"S": f"EXEC#{run}"}
    out: list[Any] = []

    def call(fn: Any, **kw: Any) -> None:
        try:
            answer = fn(**kw)
            answer.pop("ResponseMetadata", None)
            out.append(answer)
        except ClientError as e:
            out.append((e.response["Error"]["Code"], e.response["Error"]["Message"], e.response.get("Item")))
        except ValueError as e:  # moto raises a malformed expression's parse error in process
            out.append(("raised", str(e)))

    item = {**ITEM, "pk": pk}
    call(db.put_item, TableName="t", Item=item, ConditionExpression="attribute_not_exists(pk)",
         ReturnValuesOnConditionCheckFailure="ALL_OLD")
    call(db.put_item, TableName="t", Item=item, ConditionExpression="attribute_not_exists(pk)",  # refused
         ReturnValuesOnConditionCheckFailure="ALL_OLD")
    for updated in (5, 3, 9):  # the index row's "newest wins" condition, with changing values
        call(db.put_item, TableName="t", Item={"pk": pk, "sk": {"S": "A#INDEX"}, "g": {"S": "y"},
                                               "updated": {"N": str(updated)}},
             ConditionExpression="attribute_not_exists(pk) OR updated <= :u",
             ExpressionAttributeValues={":u": {"N": str(updated)}},
             ReturnValuesOnConditionCheckFailure="ALL_OLD")
    call(db.update_item, TableName="t", Key={"pk": pk, "sk": {"S": "C#1"}}, UpdateExpression="SET #s = :s",
         ConditionExpression="#s <> :done OR attribute_not_exists(#s)",
         ExpressionAttributeNames={"#s": "st"},
         ExpressionAttributeValues={":s": {"S": "x"}, ":done": {"S": "x"}},
         ReturnValues="ALL_NEW")
    call(db.update_item, TableName="t", Key={"pk": pk, "sk": {"S": "C#1"}}, UpdateExpression="SET #s = :s",
         ConditionExpression="#s <> :done OR attribute_not_exists(#s)",  # refused: now "x"
         ExpressionAttributeNames={"#s": "st"},
         ExpressionAttributeValues={":s": {"S": "x"}, ":done": {"S": "x"}},
         ReturnValuesOnConditionCheckFailure="ALL_OLD")
    call(db.put_item, TableName="t", Item=item, ConditionExpression="attribute_exists(#unused)",  # extra name
         ExpressionAttributeNames={"#unused": "pk", "#extra": "sk"})
    call(db.put_item, TableName="t", Item=item, ConditionExpression="pk = = :x",  # malformed
         ExpressionAttributeValues={":x": {"S": "y"}})
    call(db.get_item, TableName="t", Key={"pk": pk, "sk": {"S": "C#1"}}, ConsistentRead=True)
    call(db.get_item, TableName="t", Key={"pk": pk, "sk": {"S": "none"}})
    call(db.query, TableName="t", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": pk})
    call(db.query, TableName="t", IndexName="gsi", KeyConditionExpression="g = :g",
         ExpressionAttributeValues={":g": {"S": "y"}})
    call(db.batch_get_item, RequestItems={"t": {"Keys": [{"pk": pk, "sk": {"S": "C#1"}}]}})
    call(db.describe_table, TableName="t")
    call(db.delete_item, TableName="t", Key={"pk": pk, "sk": {"S": "A#INDEX"}}, ReturnValues="ALL_OLD")
    return out


def without_volatile(answer: Any) -> Any:
    if isinstance(answer, dict):
        return {k: without_volatile(v) for k, v in answer.items()
                if k not in ("CreationDateTime", "LastUpdateToPayPerRequestDateTime", "ItemCount")}
    if isinstance(answer, list):
        return [without_volatile(v) for v in answer]
    return answer


def test_dynamodb_answers_the_same_with_and_without_the_fixes(aws: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    db, _ = aws
    assert hasattr(ser.ResponseSerializer.get_value, "original") is speed_applied()
    assert hasattr(ConditionExpressionParser.parse, "original") is speed_applied()
    fixed = [dynamodb_answers(db, run) for run in (1, 2)]  # the second run hits the caches
    monkeypatch.setattr(ser.ResponseSerializer, "get_value", orig(ser.ResponseSerializer.get_value))
    monkeypatch.setattr(ConditionExpressionParser, "parse", orig(ConditionExpressionParser.parse))
    monkeypatch.setattr(stubber.BotocoreStubber, "process_request", original_routing())
    original = [dynamodb_answers(db, run) for run in (3, 4)]

    def same_shape(answers: list[Any], run: int) -> Any:
        text = repr(without_volatile(answers))
        return text.replace(f"EXEC#{run}", "EXEC#?")

    assert [same_shape(a, r) for a, r in zip(fixed, (1, 2))] == [
        same_shape(a, r) for a, r in zip(original, (3, 4))]
    assert fixed[0][1][0] == "ConditionalCheckFailedException" and fixed[0][1][2]["pk"] == {"S": "EXEC#1"}
    assert fixed[0][6][0] == "ConditionalCheckFailedException"
    assert fixed[0][7][0] == "ValidationException" and "#extra" in fixed[0][7][1]
    assert fixed[0][8] == ("raised", "Bad comparison pk = =")


def sqs_answers(sqs: Any, name: str) -> list[Any]:
    url = sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    sent = [sqs.send_message(QueueUrl=url, MessageBody=f"m{i}",
                             MessageAttributes={"a": {"DataType": "String", "StringValue": str(i)}})
            for i in range(3)]
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"],
                              MessageAttributeNames=["All"])["Messages"]
    handles = [m.pop("ReceiptHandle") for m in got]
    assert all(re.fullmatch(r"[a-z]{185}", h) for h in handles)
    deleted = sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": h}
                                                              for i, h in enumerate(handles)])
    ids = {s["MessageId"]: f"id{i}" for i, s in enumerate(sent)}
    stable = [{k: v for k, v in s.items() if k not in ("MessageId", "ResponseMetadata")} for s in sent]
    for m in got:
        m["MessageId"] = ids[m["MessageId"]]
        for volatile in ("SentTimestamp", "ApproximateFirstReceiveTimestamp"):
            m["Attributes"].pop(volatile)
    deleted.pop("ResponseMetadata")
    return [stable, got, deleted]


def test_sqs_answers_the_same_with_and_without_the_fixes(aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _, sqs = aws
    fixed = sqs_answers(sqs, "fixed")
    monkeypatch.setattr(ser.ResponseSerializer, "get_value", orig(ser.ResponseSerializer.get_value))
    monkeypatch.setattr(sqs_models, "generate_receipt_handle", orig(sqs_utils.generate_receipt_handle))
    monkeypatch.setattr(MotoRandom, "get_random_string", orig(MotoRandom.get_random_string))
    monkeypatch.setattr(stubber.BotocoreStubber, "process_request", original_routing())
    assert sqs_answers(sqs, "original") == fixed


@pytest.mark.parametrize("url", [
    "https://dynamodb.us-east-1.amazonaws.com/",
    "https://sqs.us-east-1.amazonaws.com/123456789012/q",
    "https://notaservice.us-east-1.amazonaws.com/x",  # moto's 404
    "https://example.com/elsewhere",  # not AWS: not answered
])
def test_routing_picks_what_moto_s_routing_picks(aws: Any, url: str) -> None:
    from botocore.awsrequest import AWSPreparedRequest

    def answer(process: Any) -> Any:
        req = AWSPreparedRequest("POST", url, {"Content-Type": "application/x-amz-json-1.0",
                                               "X-Amz-Target": "DynamoDB_20120810.ListTables"}, b"{}", False)
        try:
            out = process(stubber.BotocoreStubber(), req)
        except Exception as e:  # noqa: BLE001 - the same failure is the same answer
            return type(e).__name__
        return out if out is None else (out[0], out[2] if out[0] == 404 else "answered")

    fast, slow = stubber.BotocoreStubber.process_request, orig(stubber.BotocoreStubber.process_request)
    assert [answer(fast) for _ in range(2)] == [answer(slow)] * 2  # the second from the kept routes


def test_random_strings_keep_moto_s_alphabet_length_and_seeding() -> None:
    fast, slow = MotoRandom.get_random_string, orig(MotoRandom.get_random_string)
    r = MotoRandom()
    cases: list[dict[str, Any]] = [{}, {"length": 52}, {"include_digits": False, "length": 300},
                                   {"lower_case": True, "length": 300}]
    for kw in cases:
        a, b = fast(r, **kw), slow(r, **kw)
        assert len(a) == len(b) == kw.get("length", 20)
        pool = set(string.ascii_letters + ("" if kw.get("include_digits") is False else string.digits))
        if kw.get("lower_case"):
            pool = {c.lower() for c in pool}
        assert set(a) <= pool and set(b) <= pool
    assert len(set(fast(r, length=300))) > 40  # drawn across the pool, not one letter repeated
    seeded = [MotoRandom(7), MotoRandom(7)]
    assert fast(seeded[0], length=40) == fast(seeded[1], length=40)  # moto's seeding still repeats ids
    assert len(sqs_utils.generate_receipt_handle()) == 185


def test_an_open_stack_keeps_what_it_started_with_out_of_full_collections_and_hands_it_back() -> None:
    import gc

    from orbit.local import LocalStack

    gc.unfreeze()
    with LocalStack(mode="inprocess") as stack:
        assert gc.get_freeze_count() > 0  # the stack's long-lived objects (botocore models, moto)
        stack.register({"orbit": 1, "name": "one", "steps": {"a": {"task": "none.such"}}})
    assert gc.get_freeze_count() == 0  # nothing outlives the stack


CONDITIONS: list[tuple[str, dict[str, str] | None, list[dict[str, Any]]]] = [
    ("attribute_not_exists(pk)", None, [{}]),
    ("attribute_not_exists(pk) OR updated <= :u", None, [{":u": {"N": str(v)}} for v in (1, 5, 9)]),
    ("#st <> :done OR attribute_not_exists(#st)", {"#st": "st"}, [{":done": {"S": s}} for s in ("x", "y")]),
    ("size(#b) < :n AND (n BETWEEN :lo AND :hi OR begins_with(sk, :p))", {"#b": "b"},
     [{":n": {"N": "10"}, ":lo": {"N": str(lo)}, ":hi": {"N": "20"}, ":p": {"S": p}}
      for lo, p in ((1, "C#"), (15, "C#"), (15, "A#"))]),
    ("n IN (:a, :b) AND attribute_type(m, :t)", None,
     [{":a": {"N": "12.5"}, ":b": {"N": "3"}, ":t": {"S": t}} for t in ("M", "S")]),
    ("NOT contains(ss, :v)", None, [{":v": {"S": v}} for v in ("a", "z")]),
    ("attribute_not_exists(pk) OR updated <= :u", None, [{}]),  # a missing value: moto's KeyError
    ("#missing = :v", {"#other": "x"}, [{":v": {"S": "a"}}]),  # a missing name
    ("pk = = :v", None, [{":v": {"S": "a"}}]),  # malformed
]


def test_kept_condition_trees_give_moto_s_verdicts_names_and_errors_for_changing_values() -> None:
    from moto.dynamodb.models.dynamo_type import Item

    fast, slow = ConditionExpressionParser.parse, orig(ConditionExpressionParser.parse)
    items = [None, Item(ITEM["pk"], ITEM["sk"], ITEM), Item(ITEM["pk"], ITEM["sk"], {**ITEM, "st": {"S": "x"},
                                                                                    "updated": {"N": "5"}})]

    def verdict(op: Any, item: Any) -> Any:
        try:
            return op.expr(item)
        except Exception as e:  # noqa: BLE001 - the same failure is the same answer
            return type(e).__name__, str(e)

    def outcome(parse: Any, expr: str, names: Any, values: Any) -> Any:
        parser = ConditionExpressionParser(expr, names, values)
        try:
            op = parse(parser)
        except Exception as e:  # noqa: BLE001 - the same failure is the same answer
            return type(e).__name__, str(e)
        return [verdict(op, i) for i in items], parser.expr_attr_names_found, parser.expr_attr_values_found

    for expr, names, value_sets in CONDITIONS:
        for _ in range(2):  # the second time from the kept tree
            for values in value_sets:
                got, want = outcome(fast, expr, names, values), outcome(slow, expr, names, values)
                assert got == want, (expr, values)
    # the items: none, one without "updated", one with updated = 5
    verdicts = [outcome(fast, CONDITIONS[1][0], None, v)[0] for v in CONDITIONS[1][2]]
    assert verdicts == [[True, False, False], [True, False, True], [True, False, True]]
