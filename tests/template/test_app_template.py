"""examples/app/template.yaml, an app on its own stack: transforms, cfn-lint clean, least privilege
across both stacks (the app's worker sends only to its own queue and, through Orbit's exported
policy, to Orbit's decision queue; Orbit's decider and API send to apps' queues by their prefix
only), and every parameter of both templates is documented in docs/deploying.md."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import sam
from test_template import _statements, wildcard_actions

ROOT = sam.ROOT
APP = ROOT / "examples" / "app" / "template.yaml"


@pytest.fixture(scope="module")
def app_source() -> dict[str, Any]:
    from orbit.local.cfn import load_template

    data: dict[str, Any] = load_template(APP)
    return data


@pytest.fixture(scope="module")
def app_cfn(app_source: dict[str, Any]) -> dict[str, Any]:
    return sam.transform(app_source)


def test_app_transforms_and_is_cfn_lint_clean(app_cfn: dict[str, Any]) -> None:
    from cfnlint.api import lint_all

    problems = [str(m) for m in lint_all(json.dumps(app_cfn)) if m.rule.id[0] in "EW"]
    assert problems == []


def test_app_has_no_wildcard_action_and_only_xray_on_star(app_cfn: dict[str, Any]) -> None:
    assert list(_statements(app_cfn))
    assert wildcard_actions(app_cfn) == []
    for name, st in _statements(app_cfn):
        if st.get("Effect") == "Allow" and "Principal" not in st:
            resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
            assert "*" not in resources, (name, st)


def _sends(cfn: dict[str, Any], role: str) -> list[Any]:
    out: list[Any] = []
    for name, st in _statements(cfn):
        actions = st.get("Action", [])
        if name == role and "sqs:SendMessage" in ([actions] if isinstance(actions, str) else actions):
            out += st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
    return out


def test_app_worker_sends_only_to_its_own_queue_and_orbit_policy_only_to_the_decision_queue(
        app_cfn: dict[str, Any], cfn_template: dict[str, Any]) -> None:
    role = app_cfn["Resources"]["ShopWorkerRole"]["Properties"]
    assert _sends(app_cfn, "ShopWorkerRole") == [{"Fn::GetAtt": ["ShopTaskQueue", "Arn"]}]
    receives = [st["Resource"] for n, st in _statements(app_cfn)
                if n == "ShopWorkerRole" and "sqs:ReceiveMessage" in st.get("Action", [])]
    assert receives == [{"Fn::GetAtt": ["ShopTaskQueue", "Arn"]}]
    # the only managed policy is the one Orbit exports for app workers
    assert role["ManagedPolicyArns"] == [{"Fn::ImportValue": {"Fn::Sub": "${OrbitStack}-AppWorkerPolicyArn"}}]
    assert _sends(cfn_template, "AppWorkerPolicy") == [{"Fn::GetAtt": ["DecisionQueue", "Arn"]}]
    # the app's queue carries the prefix Orbit's decider may send to
    name = app_cfn["Resources"]["ShopTaskQueue"]["Properties"]["QueueName"]
    assert name == {"Fn::Sub": "${OrbitStack}-app-${AWS::StackName}-shop"}


def test_orbit_decider_and_api_send_to_their_queues_and_apps_by_prefix_only(
        cfn_template: dict[str, Any]) -> None:
    own = [{"Fn::GetAtt": [q, "Arn"]} for q in ("DecisionQueue", "DefaultTaskQueue", "HttpTaskQueue")]
    apps = {"Fn::Sub": "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${AWS::StackName}-app-*"}
    for role in ("DeciderRole", "ApiRole"):
        # webhooks: refusals to the dead-letter queue, a buffered event's check to the trigger queue
        extra = [{"Fn::GetAtt": [q, "Arn"]} for q in ("TriggerDLQ", "TriggerQueue") if role == "ApiRole"]
        assert _sends(cfn_template, role) == [*own, *extra, apps], role
    assert _sends(cfn_template, "DefinitionsRole") == []


def test_app_worker_reports_partial_failures_and_its_queue_has_an_alarmed_dlq(
        app_source: dict[str, Any]) -> None:
    fn = app_source["Resources"]["ShopWorkerFunction"]["Properties"]
    assert fn["Events"]["Tasks"]["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert (ROOT / "examples" / "app" / fn["CodeUri"] / "worker.py").is_file()
    alarm = app_source["Resources"]["ShopTaskDLQAlarm"]["Properties"]
    assert alarm["Dimensions"][0]["Value"] == {"Fn::GetAtt": ["ShopTaskDLQ", "QueueName"]}


def test_orbit_exports_what_apps_import(source_template: dict[str, Any], app_source: dict[str, Any]) -> None:
    exported = {out["Export"]["Name"]["Fn::Sub"].replace("${AWS::StackName}", "${OrbitStack}")
                for out in source_template["Outputs"].values() if "Export" in out}
    imported = set(re.findall(r'"Fn::ImportValue": \{"Fn::Sub": "([^"]+)"', json.dumps(app_source)))
    assert imported and imported <= exported, imported - exported
    param = source_template["Resources"]["LayerArnParameter"]["Properties"]["Name"]
    assert param == {"Fn::Sub": "/orbit/${AWS::StackName}/layer-arn"}
    assert app_source["Parameters"]["OrbitLayerArn"]["Default"] == "/orbit/orbit/layer-arn"


@pytest.mark.parametrize("template", ["template.yaml", "examples/app/template.yaml"])
def test_every_parameter_is_documented_with_its_default(template: str) -> None:
    from orbit.local.cfn import load_template

    docs = (ROOT / "docs" / "deploying.md").read_text()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| ([^|]*) \|", docs, re.M)}
    for name, spec in load_template(ROOT / template)["Parameters"].items():
        assert name in rows, f"{template}: parameter {name} is not in docs/deploying.md's tables"
        default = str(spec.get("Default", ""))
        shown = rows[name].strip()
        assert (f"`{default}`" in shown) if default else shown in ("empty", "none (required)"), (
            f"{template}: {name}'s default {default!r} is shown as {shown!r}")
