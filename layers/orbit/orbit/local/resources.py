"""Create what template.yaml declares, on the emulator, and describe how it is wired.

Tables (keys, GSIs/LSIs), queues (visibility timeout, delay, retention, FIFO,
redrive policy to their DLQ), buckets and Secrets Manager secrets (a fresh
generated string per local stack) are created for real on moto; the
SAM functions' SQS and Schedule events become `SqsMapping`s and `ScheduleRule`s
that the pump and the scheduler drive. Everything else (roles, log groups,
alarms, the layer, the HTTP API) only gets a placeholder identity, enough for
`!Ref`/`!GetAtt` in environment variables to resolve.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3

from .cfn import Resolver, TemplateError, load_template
from .emulator import ACCOUNT, REGION

_QUEUE_ATTRS = (
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "DelaySeconds",
    "MaximumMessageSize",
    "ReceiveMessageWaitTimeSeconds",
    "FifoQueue",
    "ContentBasedDeduplication",
)
_RATE = re.compile(r"^rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)$")
_UNIT_MS = {"minute": 60_000, "hour": 3_600_000, "day": 86_400_000}


@dataclass
class QueueInfo:
    logical_id: str
    name: str
    url: str
    arn: str
    visibility_timeout: int = 30
    dlq_arn: str | None = None
    max_receive_count: int | None = None


@dataclass
class FunctionInfo:
    logical_id: str
    code_dir: Path
    handler: str  # "module.attr", as in the template
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: int = 3


@dataclass
class SqsMapping:
    function: FunctionInfo
    queue: QueueInfo
    batch_size: int = 10
    report_failures: bool = False
    # ScalingConfig.MaximumConcurrency: at most this many invocations at once (None: one at a time
    # here; on AWS, as many as the account's concurrency allows)
    max_concurrency: int | None = None


@dataclass
class ScheduleRule:
    name: str
    function: FunctionInfo
    period_ms: int
    expression: str


@dataclass
class Deployment:
    stack_name: str
    root: Path
    tables: dict[str, str] = field(default_factory=dict)  # logical id -> table name
    buckets: dict[str, str] = field(default_factory=dict)  # logical id -> bucket name
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    mappings: list[SqsMapping] = field(default_factory=list)
    schedules: list[ScheduleRule] = field(default_factory=list)
    schedule_groups: dict[str, str] = field(default_factory=dict)  # logical id -> EventBridge Scheduler group
    exports: dict[str, Any] = field(default_factory=dict)  # Outputs' Export names -> values
    # custom resources (Custom::* or AWS::CloudFormation::CustomResource), in template order:
    # (logical id, type, resolved properties); the local cloud sends them to their ServiceToken
    custom: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def queue_by_arn(self, arn: str) -> QueueInfo:
        for q in self.queues.values():
            if q.arn == arn:
                return q
        raise TemplateError(f"no queue with ARN {arn} in the template")

    def env(self) -> dict[str, str]:
        """The union of every function's environment (all handlers share one process locally)."""
        out: dict[str, str] = {}
        for fn in self.functions.values():
            out.update(fn.env)
        return out


def lifecycle_rules(bucket_props: dict[str, Any]) -> list[dict[str, Any]]:
    """A bucket's CloudFormation `LifecycleConfiguration.Rules` in the S3 API's shape."""
    out = []
    for rule in (bucket_props.get("LifecycleConfiguration") or {}).get("Rules") or []:
        if "Fn::If" in rule:  # a conditional rule the caller did not resolve (no parameters at hand)
            continue
        api: dict[str, Any] = {"ID": rule.get("Id", ""), "Status": rule.get("Status", "Enabled"),
                               "Filter": {"Prefix": rule.get("Prefix", "")}}
        if "ExpirationInDays" in rule:
            api["Expiration"] = {"Days": int(rule["ExpirationInDays"])}
        if "AbortIncompleteMultipartUpload" in rule:
            days = int(rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"])
            api["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": days}
        out.append(api)
    return out


def parse_rate(expression: str, where: str) -> int:
    m = _RATE.match(expression.strip())
    if not m:
        raise TemplateError(
            f"{where}: schedule {expression!r}: the local stack fires rate(N unit) schedules only"
        )
    return int(m.group(1)) * _UNIT_MS[m.group(2).rstrip("s")]


def deploy(
    template_path: str | Path, stack_name: str = "orbit-local", parameters: dict[str, str] | None = None,
    imports: dict[str, Any] | None = None,
) -> Deployment:
    """Create the template's resources on the (already started) emulator. `imports`: the exports
    of stacks deployed before (an app's !ImportValue of Orbit's outputs)."""
    path = Path(template_path).resolve()
    tpl = load_template(path)
    resources: dict[str, dict[str, Any]] = tpl["Resources"]
    refs, attrs = _identities(tpl, stack_name, parameters or {}, imports or {})
    resolver = Resolver(tpl, refs, attrs, imports)
    dep = Deployment(stack_name=stack_name, root=path.parent)

    ddb, s3, sqs = boto3.client("dynamodb"), boto3.client("s3"), boto3.client("sqs")
    for lid, res in resources.items():
        props = res.get("Properties") or {}
        if res.get("Type") == "AWS::DynamoDB::Table":
            dep.tables[lid] = _create_table(ddb, refs[lid], resolver.resolve(props, f"Resources.{lid}"))
        elif res.get("Type") == "AWS::S3::Bucket":
            s3.create_bucket(Bucket=refs[lid])
            rules = lifecycle_rules(resolver.resolve(props, f"Resources.{lid}"))  # conditional rules too
            if rules:
                s3.put_bucket_lifecycle_configuration(Bucket=refs[lid],
                                                      LifecycleConfiguration={"Rules": rules})
            dep.buckets[lid] = refs[lid]
        elif res.get("Type") == "AWS::Scheduler::ScheduleGroup":
            name = str(resolver.resolve(props.get("Name") or refs[lid], f"Resources.{lid}.Properties.Name"))
            boto3.client("scheduler").create_schedule_group(Name=name)
            refs[lid] = dep.schedule_groups[lid] = name
        elif res.get("Type") == "AWS::SecretsManager::Secret":
            refs[lid] = _create_secret(refs[lid], props)  # !Ref of a secret is its ARN
        elif res.get("Type") == "AWS::SSM::Parameter":
            ssm = resolver.resolve(props, f"Resources.{lid}")
            boto3.client("ssm").put_parameter(Name=ssm["Name"], Value=str(ssm["Value"]), Type="String",
                                              Overwrite=True)
            refs[lid] = ssm["Name"]  # !Ref of a parameter is its name
    queue_ids = [lid for lid, r in resources.items() if r.get("Type") == "AWS::SQS::Queue"]
    for lid in queue_ids:  # first pass: every queue exists, so redrive targets resolve
        props = resources[lid].get("Properties") or {}
        plain = {k: v for k, v in props.items() if k in _QUEUE_ATTRS}
        attrs_in = {
            k: str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in resolver.resolve(plain, f"Resources.{lid}").items()
        }
        url = sqs.create_queue(QueueName=attrs[(lid, "QueueName")], Attributes=attrs_in)["QueueUrl"]
        refs[lid] = attrs[(lid, "QueueUrl")] = url  # the emulator's URL, for !Ref in environments
        dep.queues[lid] = QueueInfo(
            lid,
            attrs[(lid, "QueueName")],
            url,
            attrs[(lid, "Arn")],
            int(attrs_in.get("VisibilityTimeout", 30)),
        )
    for lid in queue_ids:
        redrive = (resources[lid].get("Properties") or {}).get("RedrivePolicy")
        if redrive:
            policy = resolver.resolve(redrive, f"Resources.{lid}.Properties.RedrivePolicy")
            q = dep.queues[lid]
            q.dlq_arn, q.max_receive_count = policy["deadLetterTargetArn"], int(policy["maxReceiveCount"])
            sqs.set_queue_attributes(
                QueueUrl=q.url,
                Attributes={
                    "RedrivePolicy": json.dumps(
                        {"deadLetterTargetArn": q.dlq_arn, "maxReceiveCount": q.max_receive_count}
                    )
                },
            )
    globals_fn = (tpl.get("Globals") or {}).get("Function") or {}
    for lid, res in resources.items():
        if res.get("Type") == "AWS::Serverless::Function":
            _add_function(dep, lid, res.get("Properties") or {}, globals_fn, resolver)
    for lid, res in resources.items():
        kind = str(res.get("Type") or "")
        if kind.startswith("Custom::") or kind == "AWS::CloudFormation::CustomResource":
            dep.custom.append((lid, kind, resolver.resolve(res.get("Properties") or {}, f"Resources.{lid}")))
    for out_id, out in (tpl.get("Outputs") or {}).items():
        if isinstance(out, dict) and out.get("Export"):
            name = resolver.resolve(out["Export"].get("Name"), f"Outputs.{out_id}.Export.Name")
            dep.exports[str(name)] = resolver.resolve(out.get("Value"), f"Outputs.{out_id}.Value")
    return dep


def _identities(
    tpl: dict[str, Any], stack: str, params: dict[str, str], imports: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[tuple[str, str], Any]]:
    """Physical names and ARNs, decided before anything is created (CloudFormation does the same)."""
    refs: dict[str, Any] = {
        "AWS::StackName": stack,
        "AWS::Region": REGION,
        "AWS::AccountId": ACCOUNT,
        "AWS::Partition": "aws",
        "AWS::URLSuffix": "amazonaws.com",
    }
    for name, spec in (tpl.get("Parameters") or {}).items():
        value = params.get(name, (spec or {}).get("Default"))
        if value is None:
            raise TemplateError(f"Parameters.{name}: no Default; pass a value for the local stack")
        if str((spec or {}).get("Type", "")).startswith("AWS::SSM::Parameter::Value"):
            value = _ssm_value(str(value), f"Parameters.{name}")  # as CloudFormation resolves it
        refs[name] = value
    attrs: dict[tuple[str, str], Any] = {}
    names = Resolver(tpl, refs, attrs, imports)  # physical names may use parameters (an app's prefix)
    for lid, res in tpl["Resources"].items():
        kind = res.get("Type", "")
        props = res.get("Properties") or {}
        base = f"{stack}-{lid}"
        if kind == "AWS::SQS::Queue":
            name = str(names.resolve(props.get("QueueName"), f"Resources.{lid}.Properties.QueueName") or base)
            if props.get("FifoQueue") and not name.endswith(".fifo"):
                name += ".fifo"
            arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"
            refs[lid] = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"  # fixed after create
            attrs.update({(lid, "Arn"): arn, (lid, "QueueName"): name, (lid, "QueueUrl"): refs[lid]})
        elif kind == "AWS::S3::Bucket":
            name = str(props.get("BucketName") or re.sub(r"[^a-z0-9-]", "-", base.lower()))
            refs[lid] = name
            attrs[(lid, "Arn")] = f"arn:aws:s3:::{name}"
            attrs[(lid, "DomainName")] = f"{name}.s3.amazonaws.com"
        elif kind == "AWS::DynamoDB::Table":
            name = str(props.get("TableName") or base)
            refs[lid] = name
            attrs[(lid, "Arn")] = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
        elif kind == "AWS::Lambda::Url":  # served by LocalStack.durable() on a port of its own
            refs[lid] = base
            attrs[(lid, "FunctionUrl")] = f"http://127.0.0.1/{lid}/"  # the real one: LocalStack.durable().url
        else:  # roles, log groups, alarms, layers, APIs: named, never created
            refs[lid] = base
            attrs[(lid, "Arn")] = f"arn:aws:local:{REGION}:{ACCOUNT}:{lid}"
            attrs[(lid, "QueueName")] = base
    return refs, attrs


def _ssm_value(name: str, where: str) -> str:
    try:
        return str(boto3.client("ssm").get_parameter(Name=name)["Parameter"]["Value"])
    except Exception as exc:
        raise TemplateError(f"{where}: SSM parameter {name} not found "
                            "(deploy the stack that writes it first)") from exc


def _create_secret(name: str, props: dict[str, Any]) -> str:
    """A secret whose GenerateSecretString is honoured with a fresh random string (each local
    stack has its own, as each deployed stack does); returns its ARN."""
    length = int((props.get("GenerateSecretString") or {}).get("PasswordLength") or 32)
    value = props.get("SecretString") or secrets.token_urlsafe(length)[:length]
    return str(boto3.client("secretsmanager").create_secret(Name=name, SecretString=value)["ARN"])


def _create_table(ddb: Any, name: str, props: dict[str, Any]) -> str:
    kwargs: dict[str, Any] = {
        "TableName": name,
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
        "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
    }
    if kwargs["BillingMode"] == "PROVISIONED":
        kwargs["ProvisionedThroughput"] = props["ProvisionedThroughput"]
    for key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
        if props.get(key):
            kwargs[key] = [
                {k: v for k, v in idx.items() if k in ("IndexName", "KeySchema", "Projection")}
                for idx in props[key]
            ]
    ddb.create_table(**kwargs)
    return name


def _add_function(
    dep: Deployment, lid: str, props: dict[str, Any], globals_fn: dict[str, Any], resolver: Resolver
) -> None:
    where = f"Resources.{lid}.Properties"
    merged = {**globals_fn, **props}
    env_vars = {
        **((globals_fn.get("Environment") or {}).get("Variables") or {}),
        **((props.get("Environment") or {}).get("Variables") or {}),
    }
    env = {k: str(v) for k, v in resolver.resolve(env_vars, f"{where}.Environment.Variables").items()}
    code_uri = merged.get("CodeUri")
    handler = merged.get("Handler")
    if not isinstance(code_uri, str) or not isinstance(handler, str) or "." not in handler:
        raise TemplateError(f"{where}: the local stack needs a local CodeUri and a 'module.function' Handler")
    timeout = int(resolver.resolve(merged.get("Timeout", 3), f"{where}.Timeout"))  # may be a !Ref
    fn = FunctionInfo(lid, (dep.root / code_uri).resolve(), handler, env, timeout)
    dep.functions[lid] = fn
    for ev_name, ev in (props.get("Events") or {}).items():
        ev_where = f"{where}.Events.{ev_name}"
        ev_props = ev.get("Properties") or {}
        if ev_props.get("Enabled") is False:
            continue
        if ev.get("Type") == "SQS":
            queue = dep.queue_by_arn(resolver.resolve(ev_props["Queue"], f"{ev_where}.Queue"))
            partial = "ReportBatchItemFailures" in (ev_props.get("FunctionResponseTypes") or [])
            scaling = resolver.resolve(ev_props.get("ScalingConfig") or {}, f"{ev_where}.ScalingConfig")
            cap = scaling.get("MaximumConcurrency")
            dep.mappings.append(SqsMapping(fn, queue, int(ev_props.get("BatchSize", 10)), partial,
                                           int(cap) if cap is not None else None))
        elif ev.get("Type") in ("Schedule", "ScheduleV2"):
            expr = ev_props.get("Schedule") or ev_props.get("ScheduleExpression") or ""
            dep.schedules.append(ScheduleRule(f"{lid}.{ev_name}", fn, parse_rate(expr, ev_where), expr))
