"""`orbit dev` serves durable functions: the Lambda REST paths on the dev server, the executions on
the local stack's own history store (DynamoDB on moto), so they are listed and described like any
other execution."""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.request

import boto3
from aws_durable_execution_sdk_python.lambda_service import LambdaClient
from orbit.client import Client
from orbit.local.devserver import DevServer
from orbit.local.durable_server import mount_on_dev
from orbit.local.stack import LocalStack

ENV = (
    "AWS_ENDPOINT_URL_LAMBDA",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
)


def post(dev: DevServer, raw: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    req = urllib.request.Request(f"{dev.url}/2015-03-31/functions/three-steps/invocations", raw, headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_orbit_dev_runs_a_durable_function_on_the_local_stack_store() -> None:
    saved = {k: os.environ.get(k) for k in ENV}
    LambdaClient._cached_boto_client = None
    try:
        with LocalStack(mode="server") as stack:
            dev = DevServer(stack, 0)
            thread = threading.Thread(target=dev.serve_forever, daemon=True)
            thread.start()
            try:
                endpoint = mount_on_dev(dev)  # as `orbit dev` does
                endpoint.register(
                    {"name": "three-steps", "language": "python", "handler": "durable_handlers.three_steps"}
                )
                lam = boto3.client("lambda", region_name="us-east-1", endpoint_url=dev.url)
                r = lam.invoke(FunctionName="three-steps", Payload=b"null")
                assert json.loads(r["Payload"].read()) == 3
                arn = r["DurableExecutionArn"]
                kinds = [
                    e["EventType"]
                    for e in lam.get_durable_execution_history(DurableExecutionArn=arn)["Events"]
                ]
                assert kinds.count("StepSucceeded") == 3 and kinds[-1] == "ExecutionSucceeded"
                # the same execution through Orbit's own API: listed and described like any other
                client = Client(url=dev.url)
                eid = arn.rsplit("/", 1)[-1]
                listed = client.list(workflow="three-steps")
                rows = listed["executions"] if isinstance(listed, dict) else listed
                assert [x["status"] for x in rows if x.get("execution_id", x.get("id")) == eid] == [
                    "COMPLETED"
                ]
                described = client.describe(eid)
                assert described["status"] == "COMPLETED"
                # a non-JSON body is still refused unless the request is SigV4-signed (a page cannot
                # send an Authorization header cross-origin without a preflight)
                assert post(dev, b"null", {"Content-Type": "application/octet-stream"})[0] == 415
                signed = {
                    "Content-Type": "application/octet-stream",
                    "Authorization": "AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/lambda/aws4_request",
                }
                status, body = post(dev, b"null", signed)
                assert status == 200 and json.loads(body) == 3
            finally:
                endpoint.runtime.close()
                if endpoint.logs is not None:
                    endpoint.logs.uninstall()
                dev.httpd.shutdown()
                thread.join(timeout=10)
    finally:
        LambdaClient._cached_boto_client = None
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
