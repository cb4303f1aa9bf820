"""Least privilege of durable functions on AWS (docs/decisions/dur3-aws-path.md): the durable API
is a function URL with IAM auth; what a durable function's role attaches reaches only that URL
(and the function behind it only through the URL); the decider invokes only `<stack>-durable-*`;
no other role of Orbit's may invoke a Lambda."""

from __future__ import annotations

from typing import Any

from test_template import _statements


def _actions(st: dict[str, Any]) -> list[str]:
    a = st.get("Action", [])
    return [a] if isinstance(a, str) else list(a)


def test_the_durable_api_is_a_function_url_with_iam_auth(cfn_template: dict[str, Any]) -> None:
    url = cfn_template["Resources"]["DurableApiUrl"]
    assert url["Type"] == "AWS::Lambda::Url"
    assert url["Properties"]["AuthType"] == "AWS_IAM"
    assert url["Properties"]["TargetFunctionArn"] == {"Fn::GetAtt": ["DurableApiFunction", "Arn"]}


def test_a_durable_functions_policy_reaches_only_the_url_and_the_answer_queue(
        cfn_template: dict[str, Any]) -> None:
    sts = [st for name, st in _statements(cfn_template) if name == "DurableFunctionPolicy"]
    target = {"Fn::GetAtt": ["DurableApiFunction", "Arn"]}
    assert sorted(a for st in sts for a in _actions(st)) == [
        "lambda:InvokeFunction", "lambda:InvokeFunctionUrl", "sqs:SendMessage"]
    for st in sts:
        if _actions(st) == ["sqs:SendMessage"]:  # Lambda's async destination sends with this role
            assert st["Resource"] == {"Fn::GetAtt": ["DurableAnswerQueue", "Arn"]}, st
            continue
        assert st["Resource"] == target, st
        cond = st["Condition"]
        if _actions(st) == ["lambda:InvokeFunctionUrl"]:
            assert cond == {"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}}
        else:  # invoking the function itself only through its URL (a forged event is refused by IAM)
            assert cond == {"Bool": {"lambda:InvokedViaFunctionUrl": "true"}}


def test_the_answer_queue_is_read_by_the_decider_and_sent_to_only_by_durable_functions(
        cfn_template: dict[str, Any]) -> None:
    """docs/decisions/dur4-async-invoke.md: the queue a durable function's EventInvokeConfig names."""
    arn = {"Fn::GetAtt": ["DurableAnswerQueue", "Arn"]}

    def names(action: str) -> set[str]:
        out = set()
        for name, st in _statements(cfn_template):
            res = st.get("Resource")
            if action in _actions(st) and (res == arn or (isinstance(res, list) and arn in res)):
                out.add(name)
        return out

    assert names("sqs:SendMessage") == {"DurableFunctionPolicy"}
    assert names("sqs:ReceiveMessage") == names("sqs:DeleteMessage") == {"DeciderRole"}
    mappings = [r for r in cfn_template["Resources"].values()
                if r["Type"] == "AWS::Lambda::EventSourceMapping"
                and r["Properties"].get("EventSourceArn") == arn]
    assert len(mappings) == 1 and mappings[0]["Properties"]["FunctionName"] == {"Ref": "DeciderFunction"}
    assert mappings[0]["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    env = cfn_template["Resources"]["DeciderFunction"]["Properties"]["Environment"]["Variables"]
    assert env["ORBIT_DURABLE_ANSWER_QUEUE_ARN"] == arn
    exported = {o["Export"]["Name"]["Fn::Sub"]: o["Value"] for o in cfn_template["Outputs"].values()
                if isinstance(o.get("Export", {}).get("Name"), dict)}
    assert exported["${AWS::StackName}-DurableAnswerQueueArn"] == arn


def test_only_the_decider_invokes_and_only_durable_functions(cfn_template: dict[str, Any]) -> None:
    invokers = [(name, st) for name, st in _statements(cfn_template)
                if "lambda:InvokeFunction" in _actions(st) and name != "DurableFunctionPolicy"]
    assert [name for name, _ in invokers] == ["DeciderRole"], invokers
    resource = invokers[0][1]["Resource"]
    assert resource == {"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}"
                                   ":function:${AWS::StackName}-durable-*"}


def test_the_durable_api_role_cannot_delete_or_invoke(cfn_template: dict[str, Any]) -> None:
    actions = {a for name, st in _statements(cfn_template) if name == "DurableApiRole" for a in _actions(st)}
    assert not any(a.startswith("lambda:") for a in actions)
    assert "dynamodb:DeleteItem" not in actions and "sqs:SendMessage" in actions
