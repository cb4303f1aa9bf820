"""The SAM application: transforms, lints, least privilege, handlers resolve."""

from __future__ import annotations

import json
from typing import Any, Iterator

import sam

ROOT = sam.ROOT


def _statements(cfn: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every IAM statement the deployed stack would create, with its resource name."""
    for name, res in cfn["Resources"].items():
        props = res.get("Properties", {})
        docs = []
        if res["Type"] == "AWS::IAM::Role":
            docs += [p["PolicyDocument"] for p in props.get("Policies", [])]
            docs.append(props["AssumeRolePolicyDocument"])
        elif res["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::S3::BucketPolicy"):
            docs.append(props["PolicyDocument"])
        for doc in docs:
            for st in doc["Statement"]:
                yield name, st


def wildcard_actions(cfn: dict[str, Any]) -> list[str]:
    bad = []
    for name, st in _statements(cfn):
        actions = st.get("Action", st.get("NotAction", []))
        for action in [actions] if isinstance(actions, str) else actions:
            if "*" in action:
                bad.append(f"{name}: {action}")
    return bad


def test_transform_and_cfn_lint_clean(cfn_template: dict[str, Any]) -> None:
    from cfnlint.api import lint_all

    # Informational rules (I...) are advice, not defects; errors and warnings fail.
    problems = [str(m) for m in lint_all(json.dumps(cfn_template)) if m.rule.id[0] in "EW"]
    assert problems == []


def test_cfn_lint_sees_a_broken_reference(cfn_template: dict[str, Any]) -> None:
    from cfnlint.api import lint_all

    broken = json.loads(json.dumps(cfn_template))
    broken["Resources"]["DeciderRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"][0][
        "Resource"
    ] = {"Fn::GetAtt": ["NoSuchLogGroup", "Arn"]}
    assert any("NoSuchLogGroup" in str(m) for m in lint_all(json.dumps(broken)))


def test_no_iam_statement_has_a_wildcard_action(cfn_template: dict[str, Any]) -> None:
    assert list(_statements(cfn_template)), "found no IAM statements at all: the scan is broken"
    assert wildcard_actions(cfn_template) == []


def test_wildcard_check_catches_a_planted_wildcard(cfn_template: dict[str, Any]) -> None:
    planted = json.loads(json.dumps(cfn_template))
    role = planted["Resources"]["DeciderRole"]["Properties"]["Policies"][0]["PolicyDocument"]
    role["Statement"].append({"Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"})
    assert wildcard_actions(planted) == ["DeciderRole: dynamodb:*"]


def test_no_managed_policies_are_attached_but_the_stacks_own(cfn_template: dict[str, Any]) -> None:
    # SAM's and AWS's managed policies use Resource "*"; every function must run on its own role.
    # A role may attach only a managed policy of this template (`!Ref`), whose statements the
    # checks below read like any role's (TriggerRegistrationPolicy: the API and DefinitionsFunction
    # both register definitions with triggers).
    resources = cfn_template["Resources"]
    for name, res in resources.items():
        if res["Type"] == "AWS::IAM::Role":
            for arn in res["Properties"].get("ManagedPolicyArns", []):
                assert isinstance(arn, dict) and set(arn) == {"Ref"}, (name, arn)
                assert resources[arn["Ref"]]["Type"] == "AWS::IAM::ManagedPolicy", (name, arn)


def test_only_xray_may_use_resource_star(cfn_template: dict[str, Any]) -> None:
    """... and, for SQS triggers (docs/triggers.md), the two Lambda actions IAM gives no resource
    type: listing event source mappings (read only) and creating one, pinned by a condition to the
    stack's triggers function."""
    for name, st in _statements(cfn_template):
        if st.get("Effect") != "Allow" or "Principal" in st:
            continue
        resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
        if "*" in resources:
            if st["Action"] == ["lambda:ListEventSourceMappings"]:
                continue
            if st["Action"] == ["lambda:CreateEventSourceMapping"]:
                pinned = st["Condition"]["StringEquals"]["lambda:FunctionArn"]["Fn::Sub"]
                assert pinned.endswith(":function:${AWS::StackName}-triggers"), (name, st)
                continue
            assert all(a.startswith("xray:") for a in st["Action"]), (name, st)


def test_every_handler_resolves_to_a_function_file(source_template: dict[str, Any]) -> None:
    functions = sam.serverless_resources(source_template, "AWS::Serverless::Function")
    assert len(functions) >= 5
    for name, res in functions.items():
        props = res["Properties"]
        module, _, attr = props["Handler"].rpartition(".")
        path = ROOT / props["CodeUri"] / (module.replace(".", "/") + ".py")
        assert path.is_file(), f"{name}: handler {props['Handler']} -> missing {path}"
        assert f"def {attr}(" in path.read_text() or f"{attr} =" in path.read_text(), (
            f"{name}: {path} defines no `{attr}`"
        )


def test_sqs_handlers_report_partial_failures_and_queues_have_dlq_alarms(
    source_template: dict[str, Any],
) -> None:
    resources = source_template["Resources"]
    for name, res in sam.serverless_resources(source_template, "AWS::Serverless::Function").items():
        for event in res["Properties"].get("Events", {}).values():
            if event["Type"] == "SQS":
                assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"], name
    alarmed = {
        a["Properties"]["Dimensions"][0]["Value"]["Fn::GetAtt"][0]
        for a in resources.values()
        if a["Type"] == "AWS::CloudWatch::Alarm"
        and a["Properties"]["MetricName"] == "ApproximateNumberOfMessagesVisible"  # DLQ alarms
    }
    for name, res in resources.items():
        if res["Type"] == "AWS::SQS::Queue" and "RedrivePolicy" in res["Properties"]:
            dlq = res["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
            assert dlq in alarmed, f"{name}: its DLQ {dlq} has no alarm"


def test_table_is_on_demand_encrypted_with_pitr(source_template: dict[str, Any]) -> None:
    table = source_template["Resources"]["OrbitTable"]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["SSESpecification"]["SSEEnabled"] is True
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True


def test_http_api_requires_iam_auth(source_template: dict[str, Any]) -> None:
    api = source_template["Resources"]["OrbitHttpApi"]["Properties"]["Auth"]
    assert api == {"EnableIamAuthorizer": True, "DefaultAuthorizer": "AWS_IAM"}


def test_layer_builds_from_the_engine_package(source_template: dict[str, Any]) -> None:
    layer = source_template["Resources"]["OrbitLayer"]
    assert layer["Metadata"]["BuildMethod"] == "python3.12"
    content = ROOT / layer["Properties"]["ContentUri"]
    assert (content / "orbit" / "__init__.py").is_file()
    reqs = (content / "requirements.txt").read_text()
    assert "aws-lambda-powertools" in reqs and "jsonata" in reqs


def test_task_queues_leave_receives_for_faults_after_settling(source_template: dict[str, Any]) -> None:
    """A possible duplicate is deferred until its SETTLE_RECEIVES-th receive (worker/dedupe.py). At
    maxReceiveCount 5 that left three receives for lost deletes and throttles: chaos seed 5782 sent an
    answered task message to the DLQ. Every task queue keeps at least five receives after the settling."""
    from orbit.worker.dedupe import SETTLE_RECEIVES

    resources = source_template["Resources"]
    task_queues = {n: r for n, r in resources.items()
                   if r["Type"] == "AWS::SQS::Queue" and "RedrivePolicy" in r["Properties"] and "Task" in n}
    assert task_queues, "no task queue found in template.yaml"
    for name, res in task_queues.items():
        receives = int(res["Properties"]["RedrivePolicy"]["maxReceiveCount"])
        left = receives - (SETTLE_RECEIVES - 1)
        assert left >= 5, f"{name}: maxReceiveCount {receives} leaves {left} receives for faults"
