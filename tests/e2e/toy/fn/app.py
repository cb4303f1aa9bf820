"""A toy Lambda handler: records what it receives; the message body says how to behave."""

import os

SEEN: list[dict] = []
TICKS: list[dict] = []
ATTEMPTS: dict[str, int] = {}


def handler(event, context):
    failures = []
    for record in event["Records"]:
        SEEN.append(
            {
                "body": record["body"],
                "count": int(record["attributes"]["ApproximateReceiveCount"]),
                "arn": record["eventSourceARN"],
                "greeting": os.environ["TOY_GREETING"],
                "context": context.function_name,
            }
        )
        body = record["body"]
        ATTEMPTS[body] = ATTEMPTS.get(body, 0) + 1
        if body.startswith("poison") or (body.startswith("fail-once") and ATTEMPTS[body] == 1):
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


def tick(event, context):
    TICKS.append(event)
