"""The one place that reads environment variables and builds boto3 clients and adapters.

Handlers call `engine()` / `services()` (cached per process: clients cost
50-200 ms to create, so a warm Lambda reuses them). The local stack builds its
own with `build_engine(env, clock=VirtualClock())` or swaps the cached one with
`reset(clock=...)`; `AWS_ENDPOINT_URL` (or `ORBIT_ENDPOINT_URL`) points every
client at an emulator.

Variables (template.yaml sets them): ORBIT_TABLE, ORBIT_BUCKET,
ORBIT_DECISION_QUEUE_URL, ORBIT_DEFAULT_TASK_QUEUE_URL, ORBIT_TASK_QUEUES
(JSON: task-queue name -> URL). Optional: ORBIT_TIMERS (`sqs-delay`, the
default: timers up to 15 min ride on SQS DelaySeconds, longer ones go to the
table; `table`: every timer goes to the table, for a local stack that fires
them on a virtual clock), ORBIT_TIMER_LEAD_S (0..900, default 900: how far ahead of its time the
timers function hands a table timer to SQS with the exact DelaySeconds, and how early a schedule's
EventBridge Scheduler fire is armed, so both land on the second; 0, or ORBIT_TIMERS=table: fired
on the minute tick as they come due, docs/decisions/timers-on-the-second.md),
ORBIT_SNAPSHOT_EVERY (commits between snapshots),
ORBIT_TIMER_SHARDS, ORBIT_WORKER_LEASE_S, ORBIT_RETENTION_DAYS (how long an ended
execution's data is kept when its workflow sets no retention; default 30), ORBIT_ARCHIVE_DAYS (0, the
default: no archive; N: an ended execution's history is also written to the bucket's `archive/`,
which the template's lifecycle rule empties after N days).
Schedules need ORBIT_SCHEDULE_GROUP, ORBIT_SCHEDULER_ROLE_ARN and
ORBIT_DECISION_QUEUE_ARN (the EventBridge Scheduler group, the role it sends
with, and its target); without them schedule operations are refused.
ORBIT_HOOK_SECRET_ARN: the Secrets Manager secret hook tokens are derived from
(docs/security.md); without it they are random and recorded in the history.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from orbit.errors import Problem, ValidationError

REQUIRED = ("ORBIT_TABLE", "ORBIT_BUCKET", "ORBIT_DECISION_QUEUE_URL")


class SystemClock:
    """Wall-clock time for deployed handlers (the core never reads a clock itself)."""

    def now_ms(self) -> int:
        return int(time.time() * 1000)  # noqa: TID251 - the edge owns the wall clock


@dataclass(frozen=True)
class Settings:
    table: str
    bucket: str
    decision_url: str
    default_task_url: str
    task_urls: dict[str, str]
    endpoint_url: str | None
    region: str
    timers: str
    snapshot_every: int
    timer_shards: int
    worker_lease_s: int
    retention_days: int = 30
    xray_daemon: str | None = None
    schedule_group: str = ""
    scheduler_role_arn: str = ""
    decision_arn: str = ""
    archive_days: int = 0
    hook_secret_arn: str = ""  # the key hook tokens are derived from (adapters/secrets.py)
    timer_lead_s: int = 900  # table timers handed to SQS this far ahead (timers-on-the-second.md)

    @property
    def lead_ms(self) -> int:
        """How far ahead timers and schedule fires are handed to SQS delays; 0 in `table` mode (its
        worlds' queues may not honour DelaySeconds on their clock): fired when due, on the tick."""
        return 0 if self.timers == "table" else self.timer_lead_s * 1000

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        problems = [Problem(name, "environment variable is not set")
                    for name in REQUIRED if not env.get(name)]
        try:
            task_urls = json.loads(env.get("ORBIT_TASK_QUEUES") or "{}")
            if not isinstance(task_urls, dict):
                raise ValueError("not an object")
        except ValueError as e:
            problems.append(Problem("ORBIT_TASK_QUEUES", f"must be a JSON object name -> queue URL ({e})"))
            task_urls = {}
        timers = env.get("ORBIT_TIMERS", "sqs-delay")
        if timers not in ("sqs-delay", "table"):
            problems.append(Problem("ORBIT_TIMERS", f"must be 'sqs-delay' or 'table', not {timers!r}"))
        ints = {}
        defaults = (("ORBIT_SNAPSHOT_EVERY", 25), ("ORBIT_TIMER_SHARDS", 4), ("ORBIT_WORKER_LEASE_S", 300),
                    ("ORBIT_RETENTION_DAYS", 30))
        for name, default in defaults:
            try:
                ints[name] = int(env.get(name) or default)
                if ints[name] < 1:
                    raise ValueError
            except ValueError:
                problems.append(Problem(name, f"must be a positive integer, not {env.get(name)!r}"))
        archive = (env.get("ORBIT_ARCHIVE_DAYS") or "0").strip()
        if not archive.isdigit():
            problems.append(Problem("ORBIT_ARCHIVE_DAYS", f"must be 0 (no archive) or a number of days, "
                                                          f"not {env.get('ORBIT_ARCHIVE_DAYS')!r}"))
        lead = (env.get("ORBIT_TIMER_LEAD_S") or "900").strip()
        if not (lead.isdigit() and int(lead) <= 900):
            problems.append(Problem("ORBIT_TIMER_LEAD_S", "must be a number of seconds from 0 to 900 "
                                    f"(SQS's longest delay), not {env.get('ORBIT_TIMER_LEAD_S')!r}"))
        if problems:
            raise ValidationError(problems)
        decision = env["ORBIT_DECISION_QUEUE_URL"]
        return cls(
            table=env["ORBIT_TABLE"], bucket=env["ORBIT_BUCKET"], decision_url=decision,
            default_task_url=env.get("ORBIT_DEFAULT_TASK_QUEUE_URL") or task_urls.get("default") or "",
            task_urls={str(k): str(v) for k, v in task_urls.items()},
            endpoint_url=env.get("ORBIT_ENDPOINT_URL") or env.get("AWS_ENDPOINT_URL") or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            timers=timers, snapshot_every=ints["ORBIT_SNAPSHOT_EVERY"],
            timer_shards=ints["ORBIT_TIMER_SHARDS"],
            worker_lease_s=ints["ORBIT_WORKER_LEASE_S"],
            retention_days=ints["ORBIT_RETENTION_DAYS"],
            xray_daemon=env.get("AWS_XRAY_DAEMON_ADDRESS") or None,
            schedule_group=env.get("ORBIT_SCHEDULE_GROUP") or "",
            scheduler_role_arn=env.get("ORBIT_SCHEDULER_ROLE_ARN") or "",
            decision_arn=env.get("ORBIT_DECISION_QUEUE_ARN") or "",
            archive_days=int(archive),
            hook_secret_arn=env.get("ORBIT_HOOK_SECRET_ARN") or "",
            timer_lead_s=int(lead),
        )


class Services:
    """Clients and adapters for one configuration; each is built on first use."""

    def __init__(self, settings: Settings, clock: Any = None) -> None:
        self.settings = settings
        self.clock = clock or SystemClock()

    def _client(self, service: str) -> Any:
        import boto3
        from botocore.config import Config

        # Standard retry mode: throttling and 5xx are retried with backoff, never a conditional failure.
        # S3 objects are content-addressed and their sha256 is checked on every read (adapters/s3.py), so
        # botocore's default CRC32 of every upload (pure Python, ~1.5 s per 50 MB) buys nothing.
        cfg = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=30,
                     request_checksum_calculation="when_required",
                     response_checksum_validation="when_required")
        return boto3.session.Session().client(service, region_name=self.settings.region,
                                              endpoint_url=self.settings.endpoint_url, config=cfg)

    @cached_property
    def dynamodb(self) -> Any:
        return self._client("dynamodb")

    @cached_property
    def sqs(self) -> Any:
        return self._client("sqs")

    @cached_property
    def s3(self) -> Any:
        return self._client("s3")

    @cached_property
    def payloads(self) -> Any:
        from orbit.adapters.s3 import S3PayloadStore

        return S3PayloadStore(self.s3, self.settings.bucket)

    @cached_property
    def store(self) -> Any:
        from orbit.adapters.dynamodb import DynamoHistoryStore

        return DynamoHistoryStore(self.dynamodb, self.settings.table, self.payloads,
                                  page_size=self.settings.snapshot_every + 2, blobs=self.blobs)

    @cached_property
    def blobs(self) -> Any:
        from orbit.adapters.dynamodb.retention import BlobRefs

        return BlobRefs(self.dynamodb, self.settings.table, self.payloads, self.clock)

    @cached_property
    def queues(self) -> Any:
        from orbit.adapters.sqs import SqsQueues

        s = self.settings
        return SqsQueues(self.sqs, s.decision_url, s.task_urls, s.default_task_url, self.payloads,
                         clock=self.clock, routes=self.task_routes.lookup)

    @cached_property
    def task_routes(self) -> Any:
        """Apps' task queues (Custom::OrbitTaskQueue): queue name -> URL, cached."""
        from orbit.adapters.dynamodb.routes import TaskRoutes

        return TaskRoutes(self.dynamodb, self.settings.table)

    @cached_property
    def table_timers(self) -> Any:
        from orbit.adapters.dynamodb import DynamoTimers

        return DynamoTimers(self.dynamodb, self.settings.table, shards=self.settings.timer_shards)

    @cached_property
    def timers(self) -> Any:
        if self.settings.timers == "table":
            return self.table_timers
        from orbit.adapters.sqs import DelayedWakeTimers

        return DelayedWakeTimers(self.table_timers, self.queues, self.clock)

    @cached_property
    def registry(self) -> Any:
        from orbit.adapters.dynamodb import DynamoRegistry

        return DynamoRegistry(self.dynamodb, self.settings.table, self.payloads, self.clock, blobs=self.blobs)

    @cached_property
    def idempotency(self) -> Any:
        from orbit.adapters.dynamodb import IdempotencyStore

        return IdempotencyStore(self.dynamodb, self.settings.table, self.payloads, self.clock)

    @cached_property
    def hook_key(self) -> Any:
        """The stack's hook-token key, read on first use (None without ORBIT_HOOK_SECRET_ARN: hook
        tokens are then random and recorded in the history, as before the secret existed)."""
        if not self.settings.hook_secret_arn:
            return None
        from orbit.adapters.secrets import SecretsManagerHookKey

        return SecretsManagerHookKey(lambda: self.secretsmanager, self.settings.hook_secret_arn)

    @cached_property
    def secretsmanager(self) -> Any:
        return self._client("secretsmanager")

    @cached_property
    def limits(self) -> Any:
        from orbit.adapters.dynamodb.limits import DynamoLimits

        return DynamoLimits(self.dynamodb, self.settings.table)

    @cached_property
    def flow(self) -> Any:
        from orbit.aws.observability import METER
        from orbit.service.limits import FlowGate

        return FlowGate(self.limits, self.queues, self.clock, METER)

    @cached_property
    def durable(self) -> Any:
        """Durable functions on AWS (orbit/aws/durable.py): the service on the history store, the
        Lambda adapter, followups to the decision queue. ORBIT_DURABLE_PREFIX: the names of the
        Lambdas it may invoke (`<stack>-durable-`; IAM allows those and no other)."""
        import uuid

        from orbit.adapters.lambda_functions import LambdaFunctions
        from orbit.aws.durable import AwsDurable, DeployedFunctions

        prefix = os.environ.get("ORBIT_DURABLE_PREFIX", "")
        service = DeployedFunctions(self.store, self.clock, lambda: uuid.uuid4().hex,
                                    region=self.settings.region, prefix=prefix)
        return AwsDurable(service, self.queues, LambdaFunctions(self.lambda_client), self.clock)

    @cached_property
    def lambda_client(self) -> Any:
        import boto3
        from botocore.config import Config

        # a durable function's invocation is queued (InvocationType=Event): Lambda answers 202 at once
        cfg = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=5, read_timeout=30)
        return boto3.session.Session().client("lambda", region_name=self.settings.region,
                                              endpoint_url=self.settings.endpoint_url, config=cfg)

    @cached_property
    def engine(self) -> Any:
        from orbit.adapters.memory import RandomIds
        from orbit.aws.observability import METER, MeteredStore
        from orbit.core.definition.retention import DAY_MS  # the definition loader: not at import
        from orbit.service.engine import Engine

        engine = Engine(MeteredStore(self.store), self.queues, self.timers, self.payloads, self.registry,
                        self.clock, RandomIds(self.hook_key), snapshot_every=self.settings.snapshot_every,
                        retention_ms=self.settings.retention_days * DAY_MS, tracer=self.tracer, meter=METER)
        engine.schedules = self.schedules_for(engine)
        engine.flow = self.flow  # concurrency and rate limits (docs/flow-control.md)
        from orbit.adapters.dynamodb.batches import DynamoBatchStore
        from orbit.service.batches import BatchService

        engine.batches = BatchService(DynamoBatchStore(self.dynamodb, self.settings.table), engine)
        engine.archive = self.archive
        from orbit.aws.triggers import attach

        attach(self, engine)  # triggers: webhook secrets, EventBridge rules, SQS sources (docs/triggers.md)
        timeout_s = os.environ.get("ORBIT_DECIDER_TIMEOUT_S", "")
        engine.decider_timeout_ms = int(timeout_s) * 1000 if timeout_s.isdigit() else None  # inline steps
        import_workflow_modules(os.environ.get("ORBIT_WORKFLOW_MODULES", ""))
        from orbit.service.replay_host import default_runtime
        from orbit.service.stall import StallGuard

        # code that runs ORBIT_CODE_BUDGET_S without a durable call fails its decision (issue 27)
        (engine.code_runtime or default_runtime()).guard = StallGuard()
        modules = os.environ.get("ORBIT_INLINE_MODULES", "")
        if modules.strip():  # registration (the API) refuses inline tasks those modules do not register
            from orbit.worker.inline import modules_from_env, served_by

            engine.inline_tasks = served_by(modules_from_env(modules))
        return engine

    def run_inline(self, remaining_ms: Any = None, session: str | None = None) -> Any:
        """This process runs inline steps (the decider): tasks from ORBIT_INLINE_MODULES (imported
        once, at the first call) and ctx.run functions, bounded by `remaining_ms()` (the Lambda
        context's clock). Returns the engine's InlineRunner."""
        from orbit.service.inline import InlineRunner
        from orbit.worker.inline import InlineTasks, modules_from_env

        engine = self.engine
        if engine.inline is None:
            stream = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "decider")
            tasks = InlineTasks(modules_from_env(os.environ.get("ORBIT_INLINE_MODULES")))
            engine.inline = InlineRunner(tasks, session or f"{stream}/{os.getpid()}")
        engine.inline.until(remaining_ms or (lambda: None), session)
        return engine.inline

    @cached_property
    def archive(self) -> Any:
        """Ended executions' histories in the bucket's `archive/` (None: the stack keeps none)."""
        if not self.settings.archive_days:
            return None
        from orbit.adapters.s3 import S3Archive

        return S3Archive(self.s3, self.settings.bucket)

    @cached_property
    def scheduler(self) -> Any:
        return self._client("scheduler")

    def schedules_for(self, engine: Any) -> Any:
        from orbit.adapters.dynamodb.schedules import DynamoScheduleStore
        from orbit.adapters.scheduler import EventBridgeScheduler
        from orbit.service.schedules import ScheduleService

        s = self.settings
        if not (s.schedule_group and s.scheduler_role_arn and s.decision_arn):
            return None
        # the client is made on first use: most invocations never touch a schedule
        clock = EventBridgeScheduler(lambda: self.scheduler, s.schedule_group, s.decision_arn,
                                     s.scheduler_role_arn, clock=self.clock if s.lead_ms > 0 else None)
        return ScheduleService(DynamoScheduleStore(self.dynamodb, s.table), clock, engine)

    @property
    def schedules(self) -> Any:
        """The schedule operations; OrbitError when the deployment has no schedule group."""
        if self.engine.schedules is None:
            from orbit.errors import OrbitError

            raise OrbitError("schedules are not configured: ORBIT_SCHEDULE_GROUP, ORBIT_SCHEDULER_ROLE_ARN "
                             "and ORBIT_DECISION_QUEUE_ARN must be set (template.yaml sets them)")
        return self.engine.schedules

    @cached_property
    def tracer(self) -> Any:
        """X-Ray segments where Lambda runs a daemon (Tracing: Active); elsewhere headers pass through."""
        if self.settings.xray_daemon:
            from orbit.adapters.xray import XRayTracer

            return XRayTracer(daemon_address=self.settings.xray_daemon)
        from orbit.core.tracing import PassThrough

        return PassThrough()

    @cached_property
    def worker(self) -> Any:
        from orbit.adapters.dynamodb.retention import ResultReferences
        from orbit.worker.sdk import Worker

        # `history`: read by a possible duplicate delivery only (worker/dedupe.py; the worker roles may
        # Query EXEC# partitions for it, never write them)
        return Worker(self.queues, self.idempotency, self.clock, lease_ms=self.settings.worker_lease_s * 1000,
                      tracer=self.tracer, references=ResultReferences(self.blobs, self.payloads),
                      history=self.store)


def build_services(env: Mapping[str, str] | None = None, clock: Any = None) -> Services:
    return Services(Settings.from_env(os.environ if env is None else env), clock)


def build_engine(env: Mapping[str, str] | None = None, clock: Any = None) -> Any:
    return build_services(env, clock).engine


_lock = threading.Lock()
_cached: Services | None = None
_clock_override: Any = None


def services() -> Services:
    """The process-wide Services built from os.environ (and the clock given to `reset`)."""
    global _cached
    with _lock:
        if _cached is None:
            _cached = build_services(os.environ, _clock_override)
        return _cached


def import_workflow_modules(spec: str) -> list[str]:
    """ORBIT_WORKFLOW_MODULES (the template's WorkflowModules): modules whose @orbit.workflow
    functions register as this process imports them (apps' code workflows, shipped in AppLayerArns).
    A module that does not import fails the cold start with one line naming it."""
    import importlib

    from orbit.errors import OrbitError

    names = [m for m in spec.replace(",", " ").split() if m]
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:
            raise OrbitError(f"ORBIT_WORKFLOW_MODULES: cannot import {name!r} ({type(exc).__name__}: {exc}); "
                             "is its layer in AppLayerArns?") from exc
    return names


def engine() -> Any:
    return services().engine


def reset(clock: Any = None) -> None:
    """Forget the cached services (the environment changed); later ones use `clock` if given."""
    global _cached, _clock_override
    with _lock:
        _cached = None
        _clock_override = clock
