"""The deployed handlers themselves (functions/*/app.py) on moto, facing hostile input: the API
function refuses an inline task its InlineTaskModules do not register, and the decider, handed
poison records (not JSON, nested past any parser, a bundle of junk, a result for nobody, an
over-long id) next to a good one, fails each poison record alone and decides the good one, within
its time limit."""

from __future__ import annotations

from tests.security.harness import in_child, one_line_error

MOTO_S = 60.0  # moto's import and the stack's tables: about 2 s of CPU, up to 18 s on a loaded machine
ON_MOTO = """
import base64, os, sys
os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                   "AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "1",
                   "POWERTOOLS_METRICS_NAMESPACE": "Orbit", "POWERTOOLS_SERVICE_NAME": "orbit",
                   "ORBIT_TIMERS": "table", "ORBIT_INLINE_MODULES": "tests.security.fixtures.sec_workers"})
os.environ.pop("AWS_ENDPOINT_URL", None)
sys.path.insert(0, "tests/integration")
from moto import mock_aws
from aws_resources import Clients, create_stack
from harness import LambdaContext, load_app

def api(method, path, body):
    raw = json.dumps(body) if not isinstance(body, str) else body
    event = {"version": "2.0", "rawPath": path, "requestContext": {"http": {"method": method}},
             "body": base64.b64encode(raw.encode()).decode(), "isBase64Encoded": True}
    answer = load_app("api").handler(event, LambdaContext("api"))
    return [answer["statusCode"], json.loads(answer["body"])]

def record(n, body):
    return {"messageId": f"m-{n}", "receiptHandle": f"r-{n}", "body": body,
            "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1767225600000"},
            "messageAttributes": {}, "md5OfBody": "", "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:DecisionQueue", "awsRegion": "us-east-1"}
"""


def test_the_api_function_refuses_an_inline_task_its_modules_do_not_register() -> None:
    got = in_child("""
        with mock_aws():
            clients = Clients()
            os.environ.update(create_stack(clients.dynamodb, clients.sqs, clients.s3).env())
            hostile = definition("hostile", {"run": {"task": "os:system", "inline": True,
                                                     "input": "{% input.cmd %}"}})
            registered = api("POST", "/definitions", hostile)
            started = api("POST", "/executions", {"workflow": "hostile", "input": {"cmd": "true"}})
            emit([registered, started])
    """, "the API function registering a definition", timeout_s=MOTO_S, setup=ON_MOTO)
    (status, body), (started, _) = got
    assert status == 400, body
    assert "inline task 'os:system' of step 'run' is not registered" in one_line_error(body)
    assert "sec.echo" in body["error"]["message"]  # what InlineTaskModules register
    assert started == 404


def test_the_decider_fails_only_the_poison_records_and_decides_the_rest() -> None:
    got = in_child("""
        with mock_aws():
            clients = Clients()
            os.environ.update(create_stack(clients.dynamodb, clients.sqs, clients.s3).env())
            assert api("POST", "/definitions", definition("plain", {"a": {"compute": "{% input.n + 1 %}"}},
                                                           output="{% steps.a.output %}"))[0] == 201
            start = {"kind": "start", "execution_id": "good-1", "id": "start:good-1", "workflow": "plain",
                     "version": "1", "input": {"n": 1}, "parent": None}
            records = [record(0, "this is not JSON {"), record(1, "[" * 200_000 + "]" * 200_000),
                       record(2, json.dumps([{"kind": "nope"}] * 3)), record(3, json.dumps(start)),
                       record(4, json.dumps({"kind": "result", "execution_id": "ghost", "id": "result:x",
                                             "unit": "a", "token": "t", "output": 1})),
                       record(5, json.dumps({"kind": "start", "execution_id": "x" * 100_000}))]
            answer = load_app("decider").handler({"Records": records}, LambdaContext("decider"))
            from orbit.aws.wiring import services
            emit([sorted(f["itemIdentifier"] for f in answer["batchItemFailures"]),
                  services().engine.describe("good-1")])
    """, "the decider handed poison records", timeout_s=MOTO_S, setup=ON_MOTO)
    failed, good = got
    assert failed == ["m-0", "m-1", "m-2", "m-4", "m-5"], failed  # each poison record fails alone
    assert good["status"] == "COMPLETED" and good["output"] == 2, good
