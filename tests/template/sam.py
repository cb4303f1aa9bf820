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

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"


def load_template() -> dict[str, Any]:
    """template.yaml with short-form intrinsics in long form (the local stack's loader)."""
    from orbit.local.cfn import load_template as load

    data: dict[str, Any] = load(TEMPLATE)
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
