"""Run in a fresh interpreter by test_local_patches_given_back.py; prints one JSON line.

`import`: imports every orbit module and says which attribute of moto, botocore and werkzeug changed.
`stack`: runs moto's `mock_aws` as a user's test would, then local stacks (in process, then a server,
with a workflow run through each), then `mock_aws` again, and says what changed and what differed.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from typing import Any

PREFIXES = ("moto", "botocore", "werkzeug")
# Every module a patch of orbit.local reaches into, imported before the first snapshot.
TARGET_MODULES = [
    "moto.sqs.models", "moto.sqs.utils", "moto.core.utils", "moto.core.responses",
    "moto.core.botocore_stubber",
    "moto.core.serialize", "moto.core.parse", "moto.core.request", "moto.backend_index",
    "moto.dynamodb.models.table", "moto.dynamodb.models.dynamo_type", "moto.dynamodb.responses",
    "moto.dynamodb.comparisons", "moto.moto_api._internal.moto_random", "botocore.handlers", "werkzeug.test",
    "moto.server",
]


def snapshot() -> dict[tuple[str, str, str], Any]:
    """Every attribute of every loaded moto/botocore/werkzeug module and of the classes they define."""
    out: dict[tuple[str, str, str], Any] = {}
    for name, mod in list(sys.modules.items()):
        if mod is None or name.split(".")[0] not in PREFIXES:
            continue
        for attr, value in list(vars(mod).items()):
            out[(name, "", attr)] = value
            if isinstance(value, type) and getattr(value, "__module__", None) == name:
                for cattr, cvalue in list(vars(value).items()):
                    out[(name, attr, cattr)] = cvalue
    return out


def changed(before: dict[tuple[str, str, str], Any]) -> list[str]:
    now = snapshot()
    return sorted(".".join(k) for k, v in before.items()
                  if now.get(k, before) is not v and k[2] != "__dict__")


def handlers() -> list[str]:
    from botocore.handlers import BUILTIN_HANDLERS

    return [f"{event}:{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', fn)}"
            for event, fn, *_ in BUILTIN_HANDLERS]


def user_test_with_mock_aws() -> list[Any]:
    """What a user's moto test sees: answers (without ids and times) and whether requests were signed."""
    import boto3
    from moto import mock_aws

    out: list[Any] = []
    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1", aws_access_key_id="k",
                                        aws_secret_access_key="s")
        ddb, sqs = session.client("dynamodb"), session.client("sqs")
        signed: list[bool] = []
        for client in (ddb, sqs):
            client.meta.events.register("before-send", lambda request, **_: signed.append(
                request.headers.get("Authorization") is not None), unique_id="probe-auth")
        ddb.create_table(TableName="t", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                                   {"AttributeName": "sk", "KeyType": "RANGE"}],
                         AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"}
                                               for k in ("pk", "sk")],
                         BillingMode="PAY_PER_REQUEST")
        for i in (3, 1, 2):
            ddb.put_item(TableName="t", Item={"pk": {"S": "p"}, "sk": {"S": f"s{i}"}, "n": {"N": str(i)}})
        page = ddb.query(TableName="t", KeyConditionExpression="pk = :p", Limit=2,
                         ExpressionAttributeValues={":p": {"S": "p"}})
        out.append([page["Items"], page.get("LastEvaluatedKey")])
        url = sqs.create_queue(QueueName="q", Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
        for i in range(3):
            sqs.send_message(QueueUrl=url, MessageBody=f"m{i}", DelaySeconds=1 if i == 2 else 0)
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        out.append(sorted(m["Body"] for m in got))
        out.append([len(m["ReceiptHandle"]) for m in got])
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
        out.append(attrs["Attributes"])
        out.append(signed)
    return out


def run_stacks() -> dict[str, Any]:
    from orbit.local import LocalStack, patch_registry, patches

    seen: dict[str, Any] = {}
    for mode in ("inprocess", "server"):
        with LocalStack(mode=mode, workers=["examples/workers/quotes.py"]) as stack:
            stack.register("examples/inline_quote.yaml")
            desc = stack.run_until_done(stack.start("inline-quote", {"sku": "mug", "qty": 4}))
            owners = {o.__module__ if isinstance(o, type) else o.__name__
                      for o, _, _ in patch_registry.replaced}
            seen[mode] = {"status": desc["status"], "state": patches.state(), "users": patches.users(),
                          "owners": sorted(owners)}
    seen["users_after"] = patches.users()
    return seen


def main() -> None:
    for name in TARGET_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError:  # an older moto without it: nothing there to patch
            pass
    if sys.argv[1] == "import":
        before, listed = snapshot(), handlers()
        import orbit
        import orbit.local

        for info in pkgutil.walk_packages(orbit.__path__, "orbit."):
            if info.name.endswith("__main__"):  # runs the CLI
                continue
            importlib.import_module(info.name)
        print(json.dumps({"changed": changed(before), "handlers_same": handlers() == listed,
                          "orbit_modules": sum(1 for m in sys.modules if m.startswith("orbit."))}))
        return
    first = user_test_with_mock_aws()
    before, listed = snapshot(), handlers()
    stacks = run_stacks()
    after = user_test_with_mock_aws()
    loaded = {k[0] for k in before}
    print(json.dumps({"changed": changed(before), "handlers_same": handlers() == listed, "first": first,
                      "after": after, "stacks": stacks, "snapshot_modules": sorted(loaded)}))


if __name__ == "__main__":
    main()
