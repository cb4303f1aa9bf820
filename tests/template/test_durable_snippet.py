"""The durable function snippet of docs/durable-functions.md ("On AWS"), as an app's template:
it transforms, is cfn-lint clean, is invoked asynchronously with Orbit's answer queue as both
destinations and no retry of Lambda's own, and its role sends to that queue and nowhere else
(docs/decisions/dur4-async-invoke.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import sam
from test_template import _statements

DOC = sam.ROOT / "docs" / "durable-functions.md"
QUEUE = {"Fn::ImportValue": {"Fn::Sub": "${OrbitStack}-DurableAnswerQueueArn"}}


@pytest.fixture(scope="module")
def snippet_cfn(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from orbit.local.cfn import load_template

    found = re.search(r"```yaml\n(  GreeterFunction:.*?)```", DOC.read_text(), re.S)
    assert found, "the durable function snippet is gone from docs/durable-functions.md"
    path: Path = tmp_path_factory.mktemp("snippet") / "template.yaml"
    path.write_text("AWSTemplateFormatVersion: '2010-09-09'\nTransform: AWS::Serverless-2016-10-31\n"
                    "Parameters:\n  OrbitStack: {Type: String}\nResources:\n" + found.group(1))
    return sam.transform(load_template(path))


def test_the_snippet_transforms_and_is_cfn_lint_clean(snippet_cfn: dict[str, Any]) -> None:
    from cfnlint.api import lint_all

    problems = [str(m) for m in lint_all(json.dumps(snippet_cfn)) if m.rule.id[0] in "EW"]
    assert problems == []


def test_the_snippet_sends_its_records_to_the_answer_queue(snippet_cfn: dict[str, Any]) -> None:
    configs = [r["Properties"] for r in snippet_cfn["Resources"].values()
               if r["Type"] == "AWS::Lambda::EventInvokeConfig"]
    assert len(configs) == 1
    cfg = configs[0]
    assert cfg["MaximumRetryAttempts"] == 0 and cfg["MaximumEventAgeInSeconds"] == 60
    assert cfg["DestinationConfig"] == {"OnSuccess": {"Destination": QUEUE},
                                        "OnFailure": {"Destination": QUEUE}}
    fn = snippet_cfn["Resources"]["GreeterFunction"]["Properties"]
    assert fn["Timeout"] > 180  # longer than the decider's longest timeout


def test_the_snippets_role_sends_only_to_the_answer_queue(snippet_cfn: dict[str, Any]) -> None:
    sqs = [st for _, st in _statements(snippet_cfn)
           if any(str(a).startswith("sqs:") for a in ([st["Action"]] if isinstance(st["Action"], str)
                                                       else st["Action"]))]
    assert sqs, "Lambda's destination needs sqs:SendMessage on the function's role"
    for st in sqs:
        assert st["Action"] in ("sqs:SendMessage", ["sqs:SendMessage"]) and st["Resource"] == QUEUE, st
    role = snippet_cfn["Resources"]["GreeterFunctionRole"]["Properties"]
    policy = {"Fn::ImportValue": {"Fn::Sub": "${OrbitStack}-DurableFunctionPolicyArn"}}
    assert policy in role["ManagedPolicyArns"]


def test_the_snippet_imports_only_what_orbit_exports(snippet_cfn: dict[str, Any],
                                                     source_template: dict[str, Any]) -> None:
    exported = {out["Export"]["Name"]["Fn::Sub"].replace("${AWS::StackName}", "${OrbitStack}")
                for out in source_template["Outputs"].values() if "Export" in out}
    imported = set(re.findall(r'"Fn::ImportValue": \{"Fn::Sub": "([^"]+)"', json.dumps(snippet_cfn)))
    assert "${OrbitStack}-DurableAnswerQueueArn" in imported and imported <= exported, imported - exported
