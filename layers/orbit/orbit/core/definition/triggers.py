"""`triggers:`: what starts (or signals) executions of a workflow from events (docs/triggers.md).

    triggers:
      NAME:                       # letters, digits, _ and -; names the rule, the route, the metric
        eventbridge: {bus: default, pattern: {...EventBridge pattern...}}
        # or s3: {bucket, prefix?, suffix?, bus?}   (EventBridge's "Object Created" events)
        # or sqs: {queue_arn}                       (each message starts one execution)
        # or webhook: {secret, header?, max_bytes?} (POST /webhooks/WORKFLOW/NAME, HMAC-SHA256)
        #    or webhook: {signature: {scheme: hmac|stripe, secret, header?, tolerance?}, max_bytes?}
        id: "{% detail.order_id %}"  # the execution id: the same event twice starts once
        input: "{% detail %}"        # the execution's input (default: detail, or the body)
        when: "{% detail.total > 0 %}"   # optional: false ignores the event
        signal: {name: item, payload?: TEMPLATE}   # optional: signal-with-start

Expressions read the event itself: an EventBridge event (`detail`, `source`, `` `detail-type` ``,
`id`, `time`, ...), an SQS message (`body` (JSON when it parses), `message_id`, `attributes`), a
webhook request (`body`, `headers`, lower-cased). Pure: the checks and the parsed form only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from orbit.core.definition.checks import (
    Problems,
    check_expression_string,
    check_keys,
    check_template,
    join,
    type_name,
)
from orbit.core.definition.event_patterns import pattern_problems

KINDS = ("eventbridge", "s3", "sqs", "webhook")
COMMON_KEYS = ("id", "input", "when", "signal", "debounce", "batch", "description")
MAX_BATCH = 1000
KIND_KEYS = MappingProxyType(
    {
        "eventbridge": ("bus", "pattern"),
        "s3": ("bucket", "prefix", "suffix", "bus"),
        "sqs": ("queue_arn",),
        "webhook": ("secret", "header", "max_bytes", "signature"),
    }
)
TRIGGER_NAME = re.compile(r"[A-Za-z0-9_-]{1,40}")
BUS_NAME = re.compile(r"[/.\-_A-Za-z0-9]{1,256}")
BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
QUEUE_ARN = re.compile(r"arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,80}(\.fifo)?")
SECRET = re.compile(r"[A-Za-z0-9/_+=.@:-]{1,2048}")
HEADER = re.compile(r"[A-Za-z0-9-]{1,100}")
MAX_TRIGGERS = 20
DEFAULT_HEADER = "X-Orbit-Signature"
SCHEMES = MappingProxyType({"hmac": DEFAULT_HEADER, "stripe": "Stripe-Signature"})  # scheme -> header
DEFAULT_TOLERANCE_MS = 300_000  # Stripe's own default: a signature older (or newer) than 5 min is refused
MAX_TOLERANCE_MS = 86_400_000
DEFAULT_MAX_BYTES = 256 * 1024
MAX_WEBHOOK_BYTES = 6 * 1024 * 1024  # the API's own request limit
DEFAULT_INPUT = MappingProxyType(
    {
        "eventbridge": "{% detail %}",
        "s3": "{% detail %}",
        "sqs": "{% body %}",
        "webhook": "{% body %}",
    }
)


@dataclass(frozen=True)
class Trigger:
    name: str
    kind: str  # one of KINDS
    config: dict[str, Any]  # the kind's own keys, defaults filled in
    id: str  # an expression
    input: Any  # a template
    when: str | None = None
    signal: dict[str, Any] | None = None  # {name, payload (template)}
    debounce: dict[str, Any] | None = None  # {key (expression), period_ms, max_wait_ms (or None)}
    batch: dict[str, Any] | None = None  # {key (expression or None), max_size, max_wait_ms}
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def bus(self) -> str:
        return str(self.config.get("bus") or "default")

    def pattern(self) -> dict[str, Any] | None:
        """The EventBridge pattern of an eventbridge or s3 trigger (None for the others)."""
        if self.kind == "eventbridge":
            return dict(self.config["pattern"])
        if self.kind != "s3":
            return None
        return s3_pattern(self.config["bucket"], self.config.get("prefix"), self.config.get("suffix"))


def s3_pattern(bucket: str, prefix: str | None, suffix: str | None) -> dict[str, Any]:
    """S3's "Object Created" events for one bucket; a key filter by prefix and/or suffix (both: one
    wildcard, as EventBridge ORs the matchers of one field)."""
    detail: dict[str, Any] = {"bucket": {"name": [bucket]}}
    if prefix and suffix:

        def esc(text: str) -> str:
            return text.replace("\\", "\\\\").replace("*", "\\*")

        detail["object"] = {"key": [{"wildcard": f"{esc(prefix)}*{esc(suffix)}"}]}
    elif prefix:
        detail["object"] = {"key": [{"prefix": prefix}]}
    elif suffix:
        detail["object"] = {"key": [{"suffix": suffix}]}
    return {"source": ["aws.s3"], "detail-type": ["Object Created"], "detail": detail}


def check_triggers(block: Any, path: str, out: Problems, signals: set[str] | None) -> None:
    """Every problem of a `triggers:` block; `signals`: the workflow's signal names (None: any)."""
    if not isinstance(block, dict) or not block:
        out.add(path, f"must be a non-empty mapping of trigger names to triggers, not {type_name(block)}")
        return
    if len(block) > MAX_TRIGGERS:
        out.add(path, f"{len(block)} triggers; at most {MAX_TRIGGERS}")
    for name, body in block.items():
        where = join(path, name)
        if not isinstance(name, str) or not TRIGGER_NAME.fullmatch(name):
            out.add(where, "a trigger name is 1-40 letters, digits, _ or -")
            continue
        if not isinstance(body, dict):
            out.add(
                where,
                f"must be a mapping (one of {', '.join(KINDS)} and id, input...), not {type_name(body)}",
            )
            continue
        kinds = [k for k in KINDS if k in body]
        if len(kinds) != 1:
            out.add(
                where,
                f"declare exactly one of {', '.join(KINDS)}"
                + (f" (found {', '.join(kinds)})" if kinds else ""),
            )
            continue
        kind = kinds[0]
        check_keys(body, (kind, *COMMON_KEYS), where, out, "a trigger")
        _check_kind(kind, body[kind], join(where, kind), out)
        if "id" not in body:
            out.add(
                join(where, "id"),
                "required: an expression giving the execution id, e.g. "
                '"{% detail.order_id %}" (the same event twice then starts once)',
            )
        else:
            check_expression_string(body["id"], join(where, "id"), out, "the execution id")
        if "input" in body:
            check_template(body["input"], join(where, "input"), out)
        if "when" in body:
            check_expression_string(body["when"], join(where, "when"), out, "true or false")
        if "signal" in body:
            _check_signal(body["signal"], join(where, "signal"), out, signals)
        _check_buffering(body, where, out)


def _check_kind(kind: str, conf: Any, where: str, out: Problems) -> None:
    if not isinstance(conf, dict):
        out.add(where, f"must be a mapping ({', '.join(KIND_KEYS[kind])}), not {type_name(conf)}")
        return
    check_keys(conf, KIND_KEYS[kind], where, out, f"a {kind} trigger")
    if "bus" in conf and (not isinstance(conf["bus"], str) or not BUS_NAME.fullmatch(conf["bus"])):
        out.add(join(where, "bus"), "an event bus name is 1-256 letters, digits, / . - _")
    if kind == "eventbridge":
        if "pattern" not in conf:
            out.add(join(where, "pattern"), "required: an EventBridge event pattern")
        else:
            for at, why in pattern_problems(conf["pattern"], join(where, "pattern")):
                out.add(at, why)
    elif kind == "s3":
        if not isinstance(conf.get("bucket"), str) or not BUCKET.fullmatch(conf["bucket"]):
            out.add(
                join(where, "bucket"), "required: an S3 bucket name (3-63 lower-case letters, digits, . -)"
            )
        for key in ("prefix", "suffix"):
            if key in conf and (not isinstance(conf[key], str) or not conf[key] or len(conf[key]) > 1024):
                out.add(join(where, key), "must be a non-empty string of at most 1024 characters")
    elif kind == "sqs":
        if not isinstance(conf.get("queue_arn"), str) or not QUEUE_ARN.fullmatch(conf["queue_arn"]):
            out.add(join(where, "queue_arn"), "required: an SQS queue ARN (arn:aws:sqs:REGION:ACCOUNT:NAME)")
    elif kind == "webhook":
        if "signature" in conf:
            for key in ("secret", "header"):
                if key in conf:
                    out.add(join(where, key), f"give {key} inside signature:, not next to it")
            _check_signature(conf["signature"], join(where, "signature"), out)
        else:
            _check_signature({"scheme": "hmac", **conf}, where, out, keys=False)
        if "max_bytes" in conf:
            n = conf["max_bytes"]
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_WEBHOOK_BYTES:
                out.add(join(where, "max_bytes"), f"a whole number of bytes, 1 to {MAX_WEBHOOK_BYTES}")


def _check_signature(conf: Any, where: str, out: Problems, keys: bool = True) -> None:
    """`signature: {scheme, secret, header?, tolerance?}` (or, without it, the webhook's own
    `secret` and `header`: the hmac scheme)."""
    from orbit.core.definition.checks import check_duration

    if not isinstance(conf, dict):
        out.add(where, f"must be a mapping (scheme, secret, header, tolerance), not {type_name(conf)}")
        return
    if keys:
        check_keys(conf, ("scheme", "secret", "header", "tolerance"), where, out, "a webhook's signature")
        if conf.get("scheme") not in SCHEMES:
            out.add(join(where, "scheme"), f"required: one of {', '.join(SCHEMES)} "
                    "(hmac: hex HMAC-SHA256 of the body; stripe: Stripe-Signature t=...,v1=...)")
    if not isinstance(conf.get("secret"), str) or not SECRET.fullmatch(conf["secret"]):
        out.add(
            join(where, "secret"),
            "required: the name or ARN of the Secrets Manager secret whose value signs the requests",
        )
    if "header" in conf and (not isinstance(conf["header"], str) or not HEADER.fullmatch(conf["header"])):
        out.add(join(where, "header"), "an HTTP header name (letters, digits, -)")
    if "tolerance" in conf:
        if conf.get("scheme") != "stripe":
            out.add(join(where, "tolerance"), "only the stripe scheme signs a time to check")
        else:
            ms = check_duration(conf["tolerance"], join(where, "tolerance"), out)
            if ms is not None and ms > MAX_TOLERANCE_MS:
                out.add(join(where, "tolerance"), "at most 24h")


def _check_buffering(body: dict[str, Any], where: str, out: Problems) -> None:
    """`debounce: {key, period, max_wait?}` / `batch: {key?, max_size, max_wait}` (one at most, and
    not with `signal`: a buffered trigger starts executions)."""
    from orbit.core.definition.checks import check_duration, check_int

    if "debounce" in body and "batch" in body:
        out.add(join(where, "batch"), "a trigger debounces or batches, not both")
    for name, keys in (
        ("debounce", ("key", "period", "max_wait")),
        ("batch", ("key", "max_size", "max_wait")),
    ):
        if name not in body:
            continue
        at = join(where, name)
        if "signal" in body:
            out.add(at, f"{name} starts executions; it cannot be used with signal")
        conf = body[name]
        if not isinstance(conf, dict):
            out.add(at, f"must be a mapping ({', '.join(keys)}), not {type_name(conf)}")
            continue
        check_keys(conf, keys, at, out, f"a trigger's {name}")
        if "key" in conf:
            check_expression_string(conf["key"], join(at, "key"), out, "the buffer's key")
        elif name == "debounce":
            out.add(join(at, "key"), "required: an expression giving the key events are debounced by")
        for dur in ("period", "max_wait") if name == "debounce" else ("max_wait",):
            if dur in conf:
                check_duration(conf[dur], join(at, dur), out)
            elif dur == "period" or name == "batch":
                out.add(join(at, dur), "required: a duration, e.g. 30s")
        if name == "batch":
            if "max_size" not in conf:
                out.add(join(at, "max_size"), f"required: 1 to {MAX_BATCH} events")
            elif check_int(conf["max_size"], join(at, "max_size"), out, 1) and conf["max_size"] > MAX_BATCH:
                out.add(join(at, "max_size"), f"at most {MAX_BATCH} events")


def _check_signal(conf: Any, where: str, out: Problems, signals: set[str] | None) -> None:
    if not isinstance(conf, dict):
        out.add(where, f"must be a mapping {{name, payload?}}, not {type_name(conf)}")
        return
    check_keys(conf, ("name", "payload"), where, out, "a trigger's signal")
    name = conf.get("name")
    if not isinstance(name, str) or not name:
        out.add(join(where, "name"), "required: the signal to send (signal-with-start)")
    elif signals is not None and name not in signals:
        out.add(join(where, "name"), f"the workflow has no signal {name!r}; declare it under signals:")
    if "payload" in conf:
        check_template(conf["payload"], join(where, "payload"), out)


def parse_triggers(block: Any) -> dict[str, Trigger]:
    """The parsed form of a `triggers:` block that passed `check_triggers` (empty when None)."""
    out: dict[str, Trigger] = {}
    for name, body in (block or {}).items():
        kind = next(k for k in KINDS if k in body)
        config = dict(body[kind])
        if kind in ("eventbridge", "s3"):
            config.setdefault("bus", "default")
        if kind == "webhook":
            config = _webhook(config)
        signal = body.get("signal")
        out[name] = Trigger(
            name,
            kind,
            config,
            body["id"],
            body.get("input", DEFAULT_INPUT[kind]),
            body.get("when"),
            dict(signal) if signal else None,
            _debounce(body.get("debounce")),
            _batch(body.get("batch")),
        )
    return out


def triggers_of(workflow: Any) -> dict[str, Trigger]:
    """A registered workflow's triggers: a definition's `triggers:` key, a code workflow's
    `@orbit.workflow(triggers=...)`."""
    raw = getattr(workflow, "raw", None)
    block = raw.get("triggers") if isinstance(raw, dict) else getattr(workflow, "triggers", None)
    return parse_triggers(block) if block else {}


def _webhook(config: dict[str, Any]) -> dict[str, Any]:
    """A webhook's config with its signature in one form: `signature: {scheme, secret, header,
    tolerance_ms}` (the old `secret`/`header` keys: the hmac scheme, kept as they were)."""
    from orbit.core.definition.durations import parse_duration

    sig = dict(config.pop("signature", None) or {"scheme": "hmac", "secret": config.get("secret"),
                                                  "header": config.get("header")})
    sig["header"] = sig.get("header") or SCHEMES[sig["scheme"]]
    tolerance = sig.pop("tolerance", None)
    if sig["scheme"] == "stripe":
        sig["tolerance_ms"] = parse_duration(tolerance) if tolerance is not None else DEFAULT_TOLERANCE_MS
    return {**config, "secret": sig["secret"], "header": sig["header"], "signature": sig,
            "max_bytes": config.get("max_bytes", DEFAULT_MAX_BYTES)}


def _debounce(conf: Any) -> dict[str, Any] | None:
    from orbit.core.definition.durations import parse_duration

    if not conf:
        return None
    wait = conf.get("max_wait")
    return {
        "key": conf["key"],
        "period_ms": parse_duration(conf["period"]),
        "max_wait_ms": None if wait is None else parse_duration(wait),
    }


def _batch(conf: Any) -> dict[str, Any] | None:
    from orbit.core.definition.durations import parse_duration

    if not conf:
        return None
    return {
        "key": conf.get("key"),
        "max_size": int(conf["max_size"]),
        "max_wait_ms": parse_duration(conf["max_wait"]),
    }
