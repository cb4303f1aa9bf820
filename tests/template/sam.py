"""Offline SAM transform of template.yaml, shared by the template tests.

cfn-lint 1.58 does not run the SAM transform (LOCAL-AWS-FACTS), so a bad event
`Type` or a `GetAtt` to a missing resource inside `Events` would pass it. We run
`samtranslator` ourselves with placeholder S3 code locations (no network, no
credentials) and lint the CloudFormation it produces.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"


class _CfnLoader(yaml.SafeLoader):
    """YAML loader that turns short-form intrinsics (!Ref, !Sub ...) into long form."""


def _intrinsic(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = "Ref" if tag_suffix == "Ref" else f"Fn::{tag_suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if tag_suffix == "GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


_CfnLoader.add_multi_constructor("!", _intrinsic)


def load_template() -> dict[str, Any]:
    data: dict[str, Any] = yaml.load(TEMPLATE.read_text(), Loader=_CfnLoader)  # noqa: S506 (safe loader subclass)
    return data


def serverless_resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def transform(template: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return the CloudFormation template SAM would deploy (code locations faked)."""
    from samtranslator.translator.transform import transform as sam_transform

    tpl = copy.deepcopy(template or load_template())
    for res in tpl["Resources"].values():
        props = res.get("Properties", {})
        if res["Type"] == "AWS::Serverless::Function" and isinstance(props.get("CodeUri"), str):
            props["CodeUri"] = "s3://orbit-placeholder/code.zip"
        if res["Type"] == "AWS::Serverless::LayerVersion" and isinstance(props.get("ContentUri"), str):
            props["ContentUri"] = "s3://orbit-placeholder/layer.zip"

    class _NoManagedPolicies:
        """The template uses explicit roles; asking for a managed policy is a bug."""

        def load(self) -> dict[str, str]:
            return {}

    # samtranslator asks a boto3 session for the region even offline.
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    result: dict[str, Any] = sam_transform(tpl, {"AWS::Region": "us-east-1"}, _NoManagedPolicies())  # type: ignore[arg-type]
    return result
