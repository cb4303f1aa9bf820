"""Checks for one step (and its compensate body); top-level checks live in validate.py."""

from __future__ import annotations

import re
from datetime import datetime
from types import MappingProxyType
from typing import Any

from orbit.core.definition import expressions
from orbit.core.definition.checks import (
    Problems,
    check_duration,
    check_expression_string,
    check_int,
    check_keys,
    check_name,
    check_template,
    join,
    suggest,
    type_name,
)
from orbit.core.definition.inline import check_inline
from orbit.core.definition.model import COMPENSATE_KINDS, STEP_KINDS
from orbit.core.history.task_error import retry_on_problems

COMMON_KEYS = ("after", "when", "for", "concurrency", "tolerated_failures", "input", "retry",
               "timeout", "queue_timeout", "heartbeat_timeout", "compensate", "on_failure", "queue",
               "description", "inline", "semantics", "on_missing_worker", "flow")
STEP_KEYS = STEP_KINDS + COMMON_KEYS
COMPENSATE_KEYS = COMPENSATE_KINDS + ("input", "retry", "timeout", "queue_timeout", "heartbeat_timeout",
                                      "queue")
RETRY_KEYS = ("max_attempts", "backoff", "multiplier", "max_backoff", "jitter", "non_retryable", "retry_on")
HTTP_KEYS = ("method", "url", "headers", "query", "body", "timeout")
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")

# Which kinds accept which keys; a key on the wrong kind is refused rather than ignored.
# A child workflow (`workflow:`) is not retried or timed out per step by the engine
# (it has its own `timeout`), so retry/timeout there would be silently ignored.
KEY_KINDS = MappingProxyType({
    "input": ("task", "workflow"),
    "retry": ("task", "http"),
    "timeout": ("task", "http", "wait_for"),
    "queue_timeout": ("task", "http"),
    # The built-in http adapter never heartbeats, so only worker tasks can use it.
    "heartbeat_timeout": ("task",),
    "queue": ("task",),
    "inline": ("task",),
    "semantics": ("task",),
    "on_missing_worker": ("task",),
    "flow": ("task",),
})
ON_MISSING_WORKER = ("wait", "fail")  # a task no worker serves: wait in its queue (default) or fail
# Step names become unit keys (`step[3]`, `compensate:step`), so brackets and colons are out.
STEP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,79}")
QUEUE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def kinds_of(body: dict[Any, Any], allowed: tuple[str, ...]) -> list[str]:
    return [kind for kind in allowed if kind in body]


def check_step(name: str, body: Any, path: str, out: Problems) -> str | None:
    """Check one step; return its kind when it has exactly one. Everything else in the
    step is checked even when the kind is wrong, so one pass reports all problems."""
    if not isinstance(body, dict):
        out.add(path, f"a step must be a mapping, not {type_name(body)}")
        return None
    check_keys(body, STEP_KEYS, path, out, "a step")
    kinds = kinds_of(body, STEP_KINDS)
    if not kinds:
        out.add(path, f"a step needs exactly one kind: {', '.join(STEP_KINDS)}")
    elif len(kinds) > 1:
        out.add(path, f"a step has exactly one kind, this one has {len(kinds)}: {', '.join(kinds)}")
    for each in kinds:
        _check_kind(each, body, path, out)
    kind = kinds[0] if len(kinds) == 1 else None
    if kind is not None:
        for key, kinds_ok in KEY_KINDS.items():
            if key in body and kind not in kinds_ok:
                out.add(join(path, key), f"not used by a {kind} step (only {', '.join(kinds_ok)})")
    _check_common(body, path, out)
    if "compensate" in body:
        check_compensate(body["compensate"], join(path, "compensate"), out)
    return kind


def _check_kind(kind: str, body: dict[Any, Any], path: str, out: Problems) -> None:
    value = body[kind]
    where = join(path, kind)
    if kind in ("task", "workflow"):
        check_name(value, where, out, f"the {kind} name")
    elif kind == "wait_for":
        check_name(value, where, out, "the signal name")
    elif kind == "sleep":
        if isinstance(value, dict):
            check_keys(value, ("until",), where, out, "sleep")
            if "until" not in value:
                out.add(where, "needs `until: \"{% expr %}\"` (or write a duration like sleep: 10m)")
            else:
                until = value["until"]
                if expressions.is_expression(until):
                    check_template(until, join(where, "until"), out)
                elif not isinstance(until, str) or not _is_iso_time(until):
                    out.add(join(where, "until"), "must be an expression or an ISO 8601 time "
                                                  f"like 2026-01-01T09:00:00Z, not {until!r}")
        else:
            check_duration(value, where, out, positive=False)
    elif kind == "http":
        check_http(value, where, out)
    elif kind == "compute":
        check_template(value, where, out)


def _is_iso_time(text: str) -> bool:
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def check_http(value: Any, path: str, out: Problems) -> None:
    if not isinstance(value, dict):
        out.add(path, f"must be a mapping with method and url, not {type_name(value)}")
        return
    check_keys(value, HTTP_KEYS, path, out, "http")
    method = value.get("method")
    if "method" not in value:
        out.add(path, f"needs `method` ({', '.join(HTTP_METHODS)})")
    elif not isinstance(method, str) or method.upper() not in HTTP_METHODS:
        out.add(join(path, "method"), f"must be one of {', '.join(HTTP_METHODS)}, not {method!r}")
    url = value.get("url")
    if "url" not in value:
        out.add(path, "needs `url`")
    elif expressions.is_expression(url):
        check_template(url, join(path, "url"), out)
    elif not isinstance(url, str) or not re.match(r"https?://[^/\s]+", url):
        out.add(join(path, "url"), f"must be an http:// or https:// URL or an expression, not {url!r}")
    for key in ("headers", "query"):
        if key in value:
            part = value[key]
            if not isinstance(part, dict) and not expressions.is_expression(part):
                out.add(join(path, key), f"must be a mapping or an expression, not {type_name(part)}")
            check_template(part, join(path, key), out)
    if "body" in value:
        check_template(value["body"], join(path, "body"), out)
    if "timeout" in value:
        check_duration(value["timeout"], join(path, "timeout"), out)


def _check_common(body: dict[Any, Any], path: str, out: Problems) -> None:
    after = body.get("after")
    if "after" in body:
        if not isinstance(after, list):
            out.add(join(path, "after"), f"must be a list of step names, not {type_name(after)}")
        else:
            for index, item in enumerate(after):
                if not isinstance(item, str):
                    out.add(f"{join(path, 'after')}[{index}]", f"must be a step name, not {type_name(item)}")
    if "when" in body and not isinstance(body["when"], bool):
        check_expression_string(body["when"], join(path, "when"), out, "true or false")
    if "for" in body:
        items = body["for"]
        if isinstance(items, list):
            check_template(items, join(path, "for"), out)
        else:
            check_expression_string(items, join(path, "for"), out, "a list")
    for key, minimum in (("concurrency", 1), ("tolerated_failures", 0)):
        if key in body:
            check_int(body[key], join(path, key), out, minimum)
            if "for" not in body:
                out.add(join(path, key), "only applies to a `for` step (add `for:` or remove it)")
    if "input" in body:
        check_template(body["input"], join(path, "input"), out)
    if "retry" in body:
        check_retry(body["retry"], join(path, "retry"), out)
    for key in ("timeout", "queue_timeout", "heartbeat_timeout"):
        if key in body:
            check_duration(body[key], join(path, key), out)
    if "on_failure" in body and body["on_failure"] not in ("fail", "continue"):
        out.add(join(path, "on_failure"), f"must be fail or continue, not {body['on_failure']!r}")
    if "on_missing_worker" in body and body["on_missing_worker"] not in ON_MISSING_WORKER:
        out.add(join(path, "on_missing_worker"),
                f"must be wait (the default) or fail, not {body['on_missing_worker']!r}")
    if "queue" in body and (not isinstance(body["queue"], str) or not QUEUE_NAME.fullmatch(body["queue"])):
        out.add(join(path, "queue"), "must be a queue name: 1-64 letters, digits, _ or -")
    if "description" in body and not isinstance(body["description"], str):
        out.add(join(path, "description"), f"must be a string, not {type_name(body['description'])}")
    check_inline(body, path, out)
    if "flow" in body:
        from orbit.core.flow.calls import check_step_flow

        check_step_flow(body["flow"], join(path, "flow"), out)


def check_compensate(body: Any, path: str, out: Problems) -> None:
    if not isinstance(body, dict):
        out.add(path, f"must be a task, http or workflow step body, not {type_name(body)}")
        return
    for key in body:
        if isinstance(key, str) and key not in COMPENSATE_KEYS:
            if key in STEP_KINDS:
                out.add(join(path, key), f"a compensation cannot be a {key} step (only task, http, workflow)")
            elif key in STEP_KEYS:
                out.add(join(path, key), "not allowed in a compensate body "
                                         f"(allowed: {', '.join(COMPENSATE_KEYS)})")
            else:
                out.add(join(path, key), f"unknown key in a compensate body{suggest(key, COMPENSATE_KEYS)}")
        elif not isinstance(key, str):
            out.add(path, f"key {key!r} is not a string")
    kinds = kinds_of(body, COMPENSATE_KINDS)
    if len(kinds) != 1:
        if not kinds_of(body, STEP_KINDS):
            out.add(path, "a compensation needs exactly one of task, http, workflow")
        elif len(kinds) > 1:
            out.add(path, f"a compensation has exactly one kind, this one has: {', '.join(kinds)}")
        return
    kind = kinds[0]
    _check_kind(kind, body, path, out)
    for key, kinds_ok in KEY_KINDS.items():
        if key in body and kind not in kinds_ok:
            out.add(join(path, key), f"not used by a {kind} compensation (only {', '.join(kinds_ok)})")
    if "input" in body:
        check_template(body["input"], join(path, "input"), out)
    if "retry" in body:
        check_retry(body["retry"], join(path, "retry"), out)
    for key in ("timeout", "queue_timeout", "heartbeat_timeout"):
        if key in body:
            check_duration(body[key], join(path, key), out)
    if "queue" in body and (not isinstance(body["queue"], str) or not QUEUE_NAME.fullmatch(body["queue"])):
        out.add(join(path, "queue"), "must be a queue name: 1-64 letters, digits, _ or -")


def check_retry(retry: Any, path: str, out: Problems) -> None:
    if not isinstance(retry, dict):
        out.add(path, f"must be a mapping ({', '.join(RETRY_KEYS)}), not {type_name(retry)}")
        return
    check_keys(retry, RETRY_KEYS, path, out, "retry")
    if "max_attempts" in retry:
        check_int(retry["max_attempts"], join(path, "max_attempts"), out, 1)
    for key in ("backoff", "max_backoff"):
        if key in retry:
            check_duration(retry[key], join(path, key), out, positive=False)
    if "multiplier" in retry:
        mult = retry["multiplier"]
        if isinstance(mult, bool) or not isinstance(mult, (int, float)):
            out.add(join(path, "multiplier"), f"must be a number, not {type_name(mult)}")
        elif not 1 <= mult <= 100:
            out.add(join(path, "multiplier"), "must be between 1 and 100")
    if "jitter" in retry and retry["jitter"] not in ("none", "full"):
        out.add(join(path, "jitter"), f"must be none or full, not {retry['jitter']!r}")
    for key in ("non_retryable", "retry_on"):
        codes = retry.get(key, [])
        if not isinstance(codes, list) or not all(isinstance(c, str) and c for c in codes):
            out.add(join(path, key), "must be a list of error codes (strings)")
    for problem in retry_on_problems(retry.get("retry_on"), retry.get("non_retryable")):
        out.add(join(path, "retry_on"), problem)
