"""`orbit.Client`: the API operations over HTTP, against `orbit dev` or a deployed stack.

A deployed stack's HTTP API uses IAM auth, so requests to it are signed with
SigV4 (botocore's signer, credentials from the usual boto3 chain). Requests to
a loopback URL (`orbit dev`) go unsigned.

Every call is idempotent, so a request that got no answer (connection error,
timeout, HTTP 500/502/503/504) is sent again, up to `attempts` times. For that
to hold, `start` and `signal` name their execution and signal here when the
caller does not: an API that died after committing a start has recorded it, and
the retry with the same id returns that execution and sends its first steps
(the commit log is the outbox), where a server-chosen id would have left it
orphaned and started a second one.
"""

from __future__ import annotations

import builtins
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

from orbit.errors import OrbitError

DEFAULT_LOCAL_URL = "http://127.0.0.1:8765"
RETRY_STATUSES = frozenset({500, 502, 503, 504})
MAX_REQUEST_BYTES = 6 * 1024 * 1024
"""The API refuses a larger body (`orbit.service.http.MAX_BODY_BYTES`, Lambda's own limit), and
`orbit dev` closes the connection on it before reading it: checked here, before sending."""


class ApiError(OrbitError):
    """The API answered with an error status; `status` and `body` say what it was."""

    def __init__(self, status: int, body: Any, method: str, path: str) -> None:
        self.status, self.body = status, body
        err = body.get("error") if isinstance(body, dict) else None
        detail = f"{err.get('code')}: {err.get('message')}" if isinstance(err, dict) else body
        super().__init__(f"{method} {path}: HTTP {status}: {detail}")


class RequestTooLarge(OrbitError):
    """The request body is larger than the API accepts: nothing was sent."""


class Unreachable(OrbitError):
    """No answer from the API (connection refused or reset, timeout): the request may or may
    not have been carried out, so an idempotent call is sent again."""


def stack_api_url(stack: str, region: str | None = None) -> str:
    """The `ApiUrl` output of a deployed Orbit stack."""
    import boto3
    from botocore.exceptions import BotoCoreError, NoRegionError

    try:
        region = region or boto3.session.Session().region_name  # flag, environment, then config file
        if not region:
            raise NoRegionError()
        cfn = boto3.client("cloudformation", region_name=region)
    except NoRegionError:
        raise OrbitError(
            f"--stack {stack}: no AWS region is set; pass --region REGION or set AWS_REGION"
        ) from None
    except BotoCoreError as exc:  # e.g. a profile that does not exist: say it, in one line
        raise OrbitError(f"--stack {stack}: {exc}") from None
    try:
        outputs = cfn.describe_stacks(StackName=stack)["Stacks"][0].get("Outputs") or []
    except Exception as exc:  # botocore raises several kinds; all mean the same here
        raise OrbitError(f"cannot read stack {stack!r}: {exc}") from exc
    for out in outputs:
        if out.get("OutputKey") == "ApiUrl":
            return str(out["OutputValue"])
    raise OrbitError(f"stack {stack!r} has no ApiUrl output; is it an Orbit stack?")


def _is_local(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")


class Client:
    def __init__(
        self,
        url: str | None = None,
        stack: str | None = None,
        region: str | None = None,
        timeout_s: float = 30.0,
        sign: bool | None = None,
        attempts: int = 4,
        backoff_s: float = 0.2,
    ) -> None:
        if url is None and stack is not None:
            url = stack_api_url(stack, region)
        self.url = (url or os.environ.get("ORBIT_URL") or DEFAULT_LOCAL_URL).rstrip("/")
        try:
            parts = urllib.parse.urlsplit(self.url)
            usable = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
        except ValueError:  # "http://[::1" (an unclosed bracket), "http://h:99999" (port out of range)
            usable = False
        if not usable:  # else it is taken for a deployed stack and fails later on credentials
            source = "" if url or not os.environ.get("ORBIT_URL") else " ($ORBIT_URL)"
            raise OrbitError(
                f"{self.url!r}{source} is not an http(s) URL of an Orbit API; e.g. --url http://127.0.0.1:8765"
            )
        self.region = region
        self.timeout_s = timeout_s
        self.sign = (not _is_local(self.url)) if sign is None else sign
        self.attempts, self.backoff_s = max(1, attempts), backoff_s

    # ------------------------------------------------------------------ operations
    def register(self, definition: dict[str, Any] | str) -> dict[str, Any]:
        body = definition if isinstance(definition, dict) else {"text": definition}
        return self._call("POST", "/definitions", body)

    def retire(self, name: str, version: str | None = None) -> dict[str, Any]:
        """New starts of `version` (every version when None) are refused; running executions finish.
        Returns `{name, retired: [versions]}`; registering a version again brings it back."""
        return self._call("POST", f"/definitions/{_q(name)}/retire", {} if version is None else
                          {"version": str(version)})

    def start(
        self, workflow: str, input: Any = None, id: str | None = None, version: str | None = None,
        priority: int | None = None,
    ) -> dict[str, Any]:
        """`priority` (1 highest .. 5): the start's place in its workflow's flow-control lines
        (docs/flow-control.md); the API refuses another value (400 naming `body.priority`)."""
        body: dict[str, Any] = {"workflow": workflow, "input": input if input is not None else {},
                                "id": id or f"{workflow}-{uuid.uuid4().hex}"}
        if version:
            body["version"] = version
        if priority is not None:
            body["priority"] = priority
        return self._call("POST", "/executions", body)

    def describe(
        self, execution_id: str, steps_after: str | None = None, steps_limit: int | None = None
    ) -> dict[str, Any]:
        """The describe shape; the API returns one page of `steps` (its default size unless
        `steps_limit`) and `steps_next` to pass as `steps_after` for the next."""
        params = {k: v for k, v in {"steps_after": steps_after, "steps_limit": steps_limit}.items()
                  if v is not None}
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        return self._call("GET", f"/executions/{_q(execution_id)}{query}")

    def history(
        self, execution_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Events after `after_seq`: at most `limit` of them, or all (read page by page)."""
        events: list[dict[str, Any]] = []
        for page in self.history_pages(execution_id, after_seq, limit):
            events.extend(page)
        return events

    def history_pages(
        self, execution_id: str, after_seq: int = 0, limit: int | None = None, page_size: int = 1000
    ) -> Iterator[list[dict[str, Any]]]:
        """The history one API page at a time (a page shorter than asked for is the last)."""
        after, left = after_seq, limit
        while left is None or left > 0:
            size = page_size if left is None else min(page_size, left)
            query = f"?after_seq={after}&limit={size}"
            page = self._call("GET", f"/executions/{_q(execution_id)}/history{query}")
            if not isinstance(page, list):  # an older API's {events, next_after_seq}
                page = page.get("events") or [] if isinstance(page, dict) else []
            if page:
                yield page
            if len(page) < size:
                return
            after = page[-1]["seq"]
            left = None if left is None else left - len(page)

    def signal(
        self, execution_id: str, name: str, payload: Any = None, id: str | None = None
    ) -> dict[str, Any]:
        """`id` makes the signal idempotent (kept 19 days); one is made up when not given."""
        body = {"payload": payload, "id": id or uuid.uuid4().hex}  # recorded as `signal:<id>`
        return self._call("POST", f"/executions/{_q(execution_id)}/signals/{_q(name)}", body)

    def signal_with_start(self, execution_id: str, workflow: str, signal: str, payload: Any = None,
                          input: Any = None, version: str | None = None,
                          signal_id: str | None = None) -> dict[str, Any]:
        """Signal `execution_id`, starting it (a run of `workflow` with `input`) first if it does not
        exist, atomically. `signal_id` (made up when not given) makes a retry idempotent.
        Returns {id, signal_id, started} (docs/triggers.md)."""
        body = {"workflow": workflow, "signal": signal, "payload": payload, "input": input,
                "signal_id": signal_id or f"signal:{uuid.uuid4().hex}"}
        if version is not None:
            body["version"] = version
        return self._call("POST", f"/executions/{_q(execution_id)}/signal-with-start", body)

    def resume_hook(self, token: str, payload: Any = None) -> dict[str, Any]:
        return self._call("POST", f"/hooks/{_q(token)}", {"payload": payload})

    def cancel(self, execution_id: str, reason: str | None = None, force: bool = False) -> dict[str, Any]:
        return self._call(
            "POST", f"/executions/{_q(execution_id)}/cancel", {"reason": reason, "force": force}
        )

    def redrive(self, execution_id: str, request_id: str | None = None) -> dict[str, Any]:
        """Continue a FAILED or TIMED_OUT execution; `request_id` (made up when not given) makes
        the retries of this call redrive once. Returns {id, redrive_count, steps}."""
        body = {"id": request_id or uuid.uuid4().hex}
        return self._call("POST", f"/executions/{_q(execution_id)}/redrive", body)

    def fork(self, execution_id: str, from_step: str, id: str | None = None,
             version: str | None = None, despite_compensation: bool = False) -> dict[str, Any]:
        """Start a fork of an execution from `from_step`; returns {id}. The fork's id is made up
        here when not given, so a retried request starts one fork."""
        new_id = id or f"{execution_id}-fork-{uuid.uuid4().hex[:12]}"
        body: dict[str, Any] = {"from_step": from_step, "id": new_id}
        if version:
            body["version"] = version
        if despite_compensation:  # steps it reuses were compensated: fork anyway (else 409)
            body["despite_compensation"] = True
        return self._call("POST", f"/executions/{_q(execution_id)}/fork", body)

    def query(self, execution_id: str, name: str, input: Any = None) -> Any:
        """Ask a running or ended execution one of its declared queries; records nothing."""
        path = f"/executions/{_q(execution_id)}/queries/{_q(name)}"
        return self._call("POST", path, {"input": input})["result"]

    def update(self, execution_id: str, name: str, input: Any = None, update_id: str | None = None,
               timeout: float = 10.0) -> Any:
        """Send a durable update and wait up to `timeout` seconds (at most 25) for its result.

        The update id (made up when not given) makes retries safe: the same id has one effect and
        returns the same result. Raises UpdateRefused (HTTP 400: the validator's message),
        UpdateFailed (the handler failed) or UpdateTimedOut (ask again with its update_id)."""
        from orbit.errors import update_result

        uid = update_id or f"update-{uuid.uuid4().hex}"
        path = f"/executions/{_q(execution_id)}/updates/{_q(name)}"
        body = {"input": input, "update_id": uid, "timeout": timeout}
        return update_result(self._call("POST", path, body), timeout)

    def pause(self, execution_id: str, reason: str = "") -> dict[str, Any]:
        """Hold a running execution: nothing new is dispatched, no timer fires (409 when it is
        already paused or has ended)."""
        return self._call("POST", f"/executions/{_q(execution_id)}/pause", {"reason": reason})

    def unpause(self, execution_id: str, reason: str = "") -> dict[str, Any]:
        """Let a paused execution go on; what came due meanwhile runs (409 when it is not paused)."""
        return self._call("POST", f"/executions/{_q(execution_id)}/unpause", {"reason": reason})

    def unpark(self, execution_id: str) -> dict[str, Any]:
        """Try a parked execution again now (HTTP 409 when it is not parked or has ended)."""
        return self._call("POST", f"/executions/{_q(execution_id)}/unpark", {})

    def list(
        self,
        workflow: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        started_after_ms: int | None = None,
        started_before_ms: int | None = None,
        id_prefix: str | None = None,
        started_after: str | None = None,
        started_before: str | None = None,
        where: dict[str, Any] | str | None = None,
    ) -> dict[str, Any]:
        """One page, newest first; a filtered page may be short (even empty) with a `next_cursor`.
        `started_after` (inclusive) / `started_before` (exclusive): RFC 3339 times such as
        `2026-03-30T07:00:00Z` (or the `_ms` forms: milliseconds since the epoch). `where`: a filter,
        `"status IN (RUNNING, FAILED) AND tier = gold AND amount > 100"` (docs/operations.md), or a
        mapping of search attributes that must all equal their values, `{"tier": "gold"}`."""
        if isinstance(where, dict):
            where = where_text(where)
        params = {"workflow": workflow, "status": status, "limit": limit, "cursor": cursor,
                  "started_after": started_after if started_after is not None else started_after_ms,
                  "started_before": started_before if started_before is not None else started_before_ms,
                  "id_prefix": id_prefix, "where": where}
        return self._call("GET", "/executions" + _query(params))

    # ------------------------------------------------------------------ bulk actions (docs/operations.md)
    def batch(self, action: str, where: str, id: str | None = None, **args: Any) -> dict[str, Any]:
        """Act on every execution `where` matches (started before now): `action` is cancel, signal
        (`signal=`, `payload=`), pause, unpause, redrive or fork (`from_step=`); `reason=`, `force=`
        (cancel). Returns the batch; it runs in the background (`describe_batch`)."""
        import secrets

        # the id is chosen here, so a retried request (a lost answer) is the same batch, not a second one
        body = {"where": where, "id": id or f"b-{secrets.token_hex(6)}",
                **{k: v for k, v in args.items() if v is not None}}
        return dict(self._call("POST", f"/batches/{_q(action)}", body))

    def preview_batch(self, where: str) -> dict[str, Any]:
        """`{count, capped, cap, first}`: how many executions `where` matches now (up to the cap)."""
        return dict(self._call("POST", "/batches/preview", {"where": where}))

    def describe_batch(self, batch_id: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/batches/{_q(batch_id)}"))

    def stop_batch(self, batch_id: str) -> dict[str, Any]:
        return dict(self._call("POST", f"/batches/{_q(batch_id)}/stop", {}))

    def counts(self, workflow: str | None = None) -> dict[str, Any]:
        """`{"counts": {status: n}, "cap": N}` (a count equal to the cap means at least that many)."""
        return self._call("GET", "/counts" + _query({"workflow": workflow}))

    def workflows(self) -> builtins.list[dict[str, Any]]:
        return list(self._call("GET", "/workflows")["workflows"])

    def limits(self) -> dict[str, Any]:
        """Flow control's limits with their use now: `{limits: [...], rates: [...]}`."""
        return dict(self._call("GET", "/limits"))

    def workflow_source(self, name: str, version: str, build: str) -> dict[str, Any]:
        return self._call("GET", f"/workflows/{_q(name)}" + _query({"version": version, "build": build}))

    def execution_workflow(self, execution_id: str) -> dict[str, Any]:
        """The definition (or code workflow) the execution is pinned to."""
        return self._call("GET", f"/executions/{_q(execution_id)}/workflow")

    def history_page(
        self, execution_id: str, after_seq: int = 0, limit: int = 200
    ) -> builtins.list[dict[str, Any]]:
        """At most `limit` events with seq > `after_seq`."""
        query = _query({"after_seq": after_seq or None, "limit": limit})
        return list(self._call("GET", f"/executions/{_q(execution_id)}/history{query}"))

    # ------------------------------------------------------------------ schedules (docs/schedules.md)
    def create_schedule(
        self, schedule_id: str, workflow: str, input: Any = None, **config: Any
    ) -> dict[str, Any]:
        """`config`: cron | every (+ offset), timezone, start, end, jitter, exclude, overlap,
        catchup_window, pause_on_failure, version."""
        body = {"id": schedule_id, "workflow": workflow, "input": input,
                **{k: v for k, v in config.items() if v is not None}}
        return dict(self._call("POST", "/schedules", body))

    def update_schedule(self, schedule_id: str, config: dict[str, Any]) -> dict[str, Any]:
        return dict(self._call("PUT", f"/schedules/{_q(schedule_id)}", config))

    def describe_schedule(self, schedule_id: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/schedules/{_q(schedule_id)}"))

    def list_schedules(self, limit: int = 50, cursor: str | None = None) -> dict[str, Any]:
        params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        return dict(self._call("GET", "/schedules?" + urllib.parse.urlencode(params)))

    def pause_schedule(self, schedule_id: str, note: str = "") -> dict[str, Any]:
        return dict(self._call("POST", f"/schedules/{_q(schedule_id)}/pause", {"note": note}))

    def resume_schedule(self, schedule_id: str, note: str = "") -> dict[str, Any]:
        return dict(self._call("POST", f"/schedules/{_q(schedule_id)}/resume", {"note": note}))

    def trigger_schedule(self, schedule_id: str, overlap: str | None = None) -> str | None:
        out = self._call("POST", f"/schedules/{_q(schedule_id)}/trigger", {"overlap": overlap})
        return None if out is None else out.get("execution_id")

    def backfill_schedule(
        self, schedule_id: str, start: str, end: str, overlap: str | None = None
    ) -> builtins.list[str]:
        body = {"start": start, "end": end, "overlap": overlap}
        return list(self._call("POST", f"/schedules/{_q(schedule_id)}/backfill", body)["execution_ids"])

    def delete_schedule(self, schedule_id: str) -> None:
        self._call("DELETE", f"/schedules/{_q(schedule_id)}")

    # ------------------------------------------------------------------ transport
    def _call(self, method: str, path: str, body: Any = None) -> Any:
        for attempt in range(1, self.attempts + 1):
            try:
                return self._once(method, path, body)
            except (ApiError, Unreachable) as exc:
                retry = not isinstance(exc, ApiError) or exc.status in RETRY_STATUSES
                if not retry or attempt == self.attempts:
                    raise
            time.sleep(self.backoff_s * 4 ** (attempt - 1))  # the client is an edge
        raise AssertionError("unreachable")

    def _once(self, method: str, path: str, body: Any) -> Any:
        url = self.url + path
        data = json.dumps(body).encode() if body is not None else None
        if data is not None and len(data) > MAX_REQUEST_BYTES:
            raise RequestTooLarge(f"{method} {path}: the request body is {len(data):,} bytes, more than the "
                                  f"{MAX_REQUEST_BYTES:,} the Orbit API accepts; nothing was sent")
        headers = {"content-type": "application/json", "accept": "application/json"}
        if self.sign:  # signed per attempt: a signature is only valid for a few minutes
            headers = self._signed_headers(method, url, data, headers)
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # http(s) only
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            raise ApiError(exc.code, _json_or_text(raw), method, path) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            hint = " (is `orbit dev` running?)" if _is_local(self.url) else ""
            reason = getattr(exc, "reason", exc)
            raise Unreachable(f"cannot reach the Orbit API at {self.url}{hint}: {reason}") from None
        return _json_or_text(raw) if raw else None

    def _signed_headers(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str]
    ) -> dict[str, str]:
        import boto3
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        session = boto3.session.Session(region_name=self.region)
        creds = session.get_credentials()
        if creds is None:
            raise OrbitError("no AWS credentials found to sign requests to the deployed Orbit API")
        region = self.region or session.region_name or _region_from_url(url)
        request = AWSRequest(method=method, url=url, data=data, headers=headers)
        SigV4Auth(creds.get_frozen_credentials(), "execute-api", region).add_auth(request)
        return dict(request.headers.items())


def _query(params: dict[str, Any]) -> str:
    kept = {k: v for k, v in params.items() if v is not None}
    return ("?" + urllib.parse.urlencode(kept)) if kept else ""


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _region_from_url(url: str) -> str:
    host = urllib.parse.urlsplit(url).hostname or ""
    parts = host.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "execute-api" else "us-east-1"


def _json_or_text(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def where_text(attributes: dict[str, Any]) -> str:
    """`{"tier": "gold", "n": 2}` as the filter `tier = "gold" AND n = 2`."""
    import json

    if not attributes:
        raise ValueError("where: a mapping of at least one search attribute")
    return " AND ".join(f"attributes.{key} = {json.dumps(value)}" for key, value in attributes.items())
