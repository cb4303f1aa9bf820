"""`triggers:` in definitions and `@orbit.workflow(triggers=...)` (docs/triggers.md): checked at
registration, a pattern EventBridge would refuse refused by its path; the parsed form."""

from __future__ import annotations

from typing import Any

import orbit
import pytest
from orbit.core.definition import parse_definition
from orbit.core.definition.event_patterns import matches, pattern_problems
from orbit.core.definition.triggers import s3_pattern, triggers_of
from orbit.errors import ValidationError
from orbit.workflow import CodeRegistry

ORDER = {
    "source": ["shop.orders"],
    "detail-type": ["OrderPlaced"],
    "detail": {"total": [{"numeric": [">", 0]}]},
}


def _doc(triggers: Any, **extra: Any) -> dict[str, Any]:
    return {
        "orbit": 1,
        "name": "orders",
        "version": "1",
        "signals": {"item": {}},
        "steps": {"a": {"compute": "{% input %}"}},
        "triggers": triggers,
        **extra,
    }


def _problems(triggers: Any) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as e:
        parse_definition(_doc(triggers))
    return [(p.path, p.message) for p in e.value.problems]


def test_a_valid_block_parses_with_defaults_filled_in() -> None:
    wf = parse_definition(
        _doc(
            {
                "placed": {"eventbridge": {"pattern": ORDER}, "id": "{% detail.id %}"},
                "upload": {
                    "s3": {"bucket": "my-bucket", "prefix": "in/", "suffix": ".csv"},
                    "id": "{% detail.object.key %}",
                },
                "queue": {
                    "sqs": {"queue_arn": "arn:aws:sqs:eu-west-1:123456789012:orders"},
                    "id": "{% body.id %}",
                    "when": "{% body.kind = 'new' %}",
                },
                "hook": {
                    "webhook": {"secret": "orbit/stripe"},
                    "id": "{% body.id %}",
                    "signal": {"name": "item", "payload": "{% body.item %}"},
                },
            }
        )
    )
    t = triggers_of(wf)
    assert list(t) == ["placed", "upload", "queue", "hook"]
    assert (
        t["placed"].bus == "default"
        and t["placed"].input == "{% detail %}"
        and t["placed"].pattern() == ORDER
    )
    assert t["upload"].pattern() == {
        "source": ["aws.s3"],
        "detail-type": ["Object Created"],
        "detail": {"bucket": {"name": ["my-bucket"]}, "object": {"key": [{"wildcard": "in/*.csv"}]}},
    }
    assert t["queue"].input == "{% body %}" and t["queue"].pattern() is None
    assert t["hook"].config == {"secret": "orbit/stripe", "header": "X-Orbit-Signature", "max_bytes": 262144,
                                "signature": {"scheme": "hmac", "secret": "orbit/stripe",
                                              "header": "X-Orbit-Signature"}}
    assert t["hook"].signal == {"name": "item", "payload": "{% body.item %}"}


@pytest.mark.parametrize(
    ("pattern", "path", "fragment"),
    [
        ({"source": "shop"}, "triggers.t.eventbridge.pattern.source", "must be a mapping or a list"),
        ({"source": []}, "triggers.t.eventbridge.pattern.source", "empty arrays"),
        (
            {"detail": {"n": [{"numeric": [">", "x"]}]}},
            "triggers.t.eventbridge.pattern.detail.n[0].numeric",
            "numeric",
        ),
        (
            {"detail": {"n": [{"numeric": ["<", 5, ">", 1]}]}},
            "triggers.t.eventbridge.pattern.detail.n[0].numeric",
            "lower",
        ),
        (
            {"detail": {"n": [{"exist": True}]}},
            "triggers.t.eventbridge.pattern.detail.n[0].exist",
            "unknown operator",
        ),
        (
            {"detail": {"n": [{"exists": "yes"}]}},
            "triggers.t.eventbridge.pattern.detail.n[0].exists",
            "true or false",
        ),
        (
            {"detail": {"n": [{"prefix": "a", "suffix": "b"}]}},
            "triggers.t.eventbridge.pattern.detail.n[0]",
            "exactly one operator",
        ),
        ({"$or": [{"a": ["x"]}]}, "triggers.t.eventbridge.pattern.$or", "two or more"),
        ({}, "triggers.t.eventbridge.pattern", "non-empty"),
        ({"ip": [{"cidr": "10.0.0/99"}]}, "triggers.t.eventbridge.pattern.ip[0].cidr", "CIDR"),
        (
            {"s": [{"anything-but": {"contains": "x"}}]},
            "triggers.t.eventbridge.pattern.s[0].anything-but",
            "anything-but",
        ),
        ({"s": ["x" * 5000]}, "triggers.t.eventbridge.pattern", "at most 4096"),
    ],
)
def test_a_pattern_eventbridge_would_refuse_is_refused_naming_the_field(
    pattern: Any, path: str, fragment: str
) -> None:
    found = _problems({"t": {"eventbridge": {"pattern": pattern}, "id": "{% id %}"}})
    assert any(p == path and fragment in m for p, m in found), found


def test_each_trigger_key_is_checked_by_its_path() -> None:
    found = dict(
        _problems(
            {
                "bad name!": {"sqs": {}},
                "two": {"sqs": {"queue_arn": "x"}, "webhook": {"secret": "s"}, "id": "{% 1 %}"},
                "noid": {"eventbridge": {"pattern": ORDER}},
                "q": {"sqs": {"queue_arn": "not-an-arn"}, "id": "x"},
                "w": {"webhook": {"max_bytes": 0}, "id": "{% 1 %}", "signal": {"name": "nope"}, "extra": 1},
                "s": {"s3": {"bucket": "B"}, "id": "{% 1 %}", "when": "{% ( %}"},
            }
        )
    )
    assert "triggers.bad name!" in found
    assert "exactly one of" in found["triggers.two"]
    assert "required" in found["triggers.noid.id"]
    assert "SQS queue ARN" in found["triggers.q.sqs.queue_arn"] and "expression" in found["triggers.q.id"]
    assert "Secrets Manager" in found["triggers.w.webhook.secret"]
    assert "bytes" in found["triggers.w.webhook.max_bytes"]
    assert "no signal 'nope'" in found["triggers.w.signal.name"]
    assert "unknown key" in found["triggers.w.extra"]
    assert "bucket" in found["triggers.s.s3.bucket"] and "parse" in found["triggers.s.when"]


def test_a_code_workflow_declares_triggers_checked_the_same_way() -> None:
    reg = CodeRegistry()

    @orbit.workflow(
        "coded",
        registry=reg,
        signals={"item": None},
        triggers={
            "placed": {"eventbridge": {"pattern": ORDER}, "id": "{% detail.id %}", "signal": {"name": "item"}}
        },
    )
    def coded(ctx: Any, input: Any) -> Any:
        return input

    assert triggers_of(coded)["placed"].signal == {"name": "item"}
    with pytest.raises(ValidationError) as e:
        orbit.workflow(
            "bad", registry=reg, triggers={"t": {"eventbridge": {"pattern": {"a": "b"}}, "id": "{% 1 %}"}}
        )
    assert e.value.problems[0].path == "workflow.triggers.t.eventbridge.pattern.a"


def test_patterns_match_as_eventbridge_does() -> None:
    event = {
        "source": "shop.orders",
        "detail-type": "OrderPlaced",
        "detail": {"total": 5, "tags": ["a", "b"]},
    }
    assert matches(ORDER, event)
    assert not matches(ORDER, {**event, "detail": {"total": 0}})
    assert matches({"detail": {"tags": ["b"]}}, event)
    assert matches({"detail": {"gone": [{"exists": False}]}}, event)
    assert not matches({"detail": {"total": [{"exists": False}]}}, event)
    assert matches({"source": [{"prefix": "shop."}], "detail-type": [{"anything-but": ["X"]}]}, event)
    assert matches(
        {"$or": [{"source": ["x"]}, {"detail": {"total": [{"numeric": [">=", 5, "<", 6]}]}}]}, event
    )
    key = {
        "source": "aws.s3",
        "detail-type": "Object Created",
        "detail": {"bucket": {"name": "b"}, "object": {"key": "in/x.csv"}},
    }
    assert matches(s3_pattern("b", "in/", None), key) and not matches(s3_pattern("b", "out/", None), key)
    assert pattern_problems(s3_pattern("b", "in/", ".csv"), "p") == []
