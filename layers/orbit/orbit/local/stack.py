"""`orbit.LocalStack`: the whole Orbit deployment on one machine.

It starts moto, creates what `template.yaml` declares, and drives the real
handlers (`functions/*/app.py`): the decider on the decision queue, the
workers on the task queues, the timers function on its schedule. Operations
(`start`, `signal`, ...) go through the same engine API the HTTP API Lambda
uses, built by `orbit.aws.wiring` from the stack's environment with the virtual clock.
Every task registered with `@orbit.worker.task` in this process is served.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from orbit.errors import OrbitError

from . import clock
from .emulator import Mode
from .runner import LocalCloud
from .stack_schedules import ScheduleOps
from .text import utc
from .timeline import fmt_duration

TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT")


def find_template(explicit: str | Path | None = None) -> Path:
    """The SAM template: explicit, $ORBIT_TEMPLATE, ./template.yaml, or the repository's."""
    import os

    candidates = [
        explicit,
        os.environ.get("ORBIT_TEMPLATE"),
        Path.cwd() / "template.yaml",
        Path(__file__).resolve().parents[4] / "template.yaml",
    ]
    for c in candidates:
        if c and Path(c).is_file():
            return Path(c)
    raise OrbitError(
        f"no template.yaml found (looked at: {', '.join(str(c) for c in candidates if c)}); "
        "pass template=... or set ORBIT_TEMPLATE"
    )


def load_workers(spec: str) -> ModuleType:
    """Import a workers module (dotted name or .py path) so its @task functions register."""
    path = Path(spec)
    if spec.endswith(".py"):
        if not path.is_file():
            raise OrbitError(f"--workers {spec}: file not found")
        name = "_orbit_workers_" + "_".join(path.resolve().with_suffix("").parts[-3:])
        if name in sys.modules:
            return sys.modules[name]
        mod_spec = importlib.util.spec_from_file_location(name, path)
        assert mod_spec is not None and mod_spec.loader is not None
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[name] = module
        mod_spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(spec)
    except ImportError as exc:
        raise OrbitError(
            f"--workers {spec}: cannot import it ({exc}); pass a module on sys.path or a .py file"
        )


class NothingDueInTime(TimeoutError):
    """A real-time run cannot end in its wall time: the next wake-up lies beyond it (said at once,
    not after waiting in vain)."""


class LocalStack(ScheduleOps):
    def __init__(
        self,
        template: str | Path | None = None,
        mode: Mode = "server",
        port: int = 0,
        workers: list[str] | tuple[str, ...] = (),
        auto_advance: bool = False,
        parameters: dict[str, str] | None = None,
        concurrent_workers: bool = False,
        logs_to_stderr: bool = False,
        app: str | Path | list[str | Path] | None = None,
    ) -> None:
        """`app`: an app directory (its own template.yaml, examples/app), or several, deployed after
        Orbit's with their workers and custom resources (orbit/local/apps.py).
        `concurrent_workers`: run each worker function with as many invocations at once as its
        MaximumConcurrency parameter allows, as Lambda does (default: one at a time).
        `logs_to_stderr`: what the handlers print (their JSON log lines) goes to stderr, keeping
        stdout for a command's result (the CLI sets it)."""
        import os

        from .parameters import check_parameters

        template_path = find_template(template)
        check_parameters(template_path, parameters or {})  # a misspelt name must not be ignored
        # Quiet by default: the handlers' INFO logs and EMF metrics would drown a terminal.
        params = {"LogLevel": os.environ.get("ORBIT_LOG_LEVEL", "WARNING"), **(parameters or {})}
        self.cloud = LocalCloud(
            template_path,
            mode=mode,
            port=port,
            parameters=params,
            env_overrides={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_TRACE_DISABLED": "true"},
            concurrent=concurrent_workers,
            logs_to_stderr=logs_to_stderr,
            apps=[] if app is None else list(app) if isinstance(app, list) else [app],
            # with apps, Orbit's stack is named as samconfig.toml names it: an app's template then
            # deploys with its defaults as written (OrbitStack=orbit, /orbit/orbit/layer-arn)
            **({"stack_name": "orbit"} if app else {}),
        )
        self.workers = list(workers)
        self.auto_advance = auto_advance
        self.services: Any = None
        self._durable: Any = None  # durable functions through the AWS path (durable())

    # ------------------------------------------------------------------ life cycle
    def __enter__(self) -> LocalStack:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        from orbit.aws import wiring as aws

        for spec in self.workers:
            load_workers(spec)
        self.cloud.start()
        aws.reset(clock=clock.VirtualClock())  # handlers and this stack share one engine, on virtual time
        self.services = aws.services()
        # one process: every handler reads this registry, never a cache older than another's, so a
        # shared task limit is in force at once (adapters/dynamodb/task_limits.py)
        self.services.registry.shared.settle_ms = 0
        self.services.run_inline(session="local")  # the tasks registered here (its workers) run inline
        from .trigger_sources import attach

        attach(self)  # SQS triggers: pollers of their queues, as Lambda's mappings (docs/triggers.md)
        lead = self.services.settings.lead_ms
        table = self.services.table_timers
        # the timers function's tick at or after (next fire - lead) hands it over (timers-on-the-second.md)
        self.cloud.next_timer = lambda: None if (t := table.next_fire_ms()) is None else t - lead
        # What exists now (modules, botocore's service models, moto) lives as long as the stack: kept
        # out of the garbage collector's full passes, which otherwise walk it all again and again
        # (about 5% of a busy stack's time). close() hands it back, so nothing outlives the stack.
        gc.freeze()

    def durable(self) -> Any:
        """Durable functions through the AWS path (orbit/local/durable_aws.py: the function URL that
        checks SigV4, Lambda's Invoke of the functions), started at the first call."""
        if self._durable is None:
            from .durable_aws import LocalDurableAws

            self._durable = LocalDurableAws(self)
        return self._durable

    def close(self) -> None:
        from orbit.aws import wiring as aws

        if self._durable is not None:
            self._durable.close()
            self._durable = None
        gc.unfreeze()
        self.cloud.stop()
        aws.reset()
        self.services = None

    @property
    def engine(self) -> Any:
        if self.services is None:
            raise OrbitError("the LocalStack is not open: use `with LocalStack() as stack:`")
        return self.services.engine

    @property
    def endpoint_url(self) -> str | None:
        return self.cloud.emulator.endpoint_url

    # ------------------------------------------------------------------ workflows
    def register(self, definition_or_path_or_function: Any) -> str:
        """Register a definition (path, YAML/JSON text, dict) or a code workflow; returns its name."""
        from orbit.core.definition import load_definition, parse_definition
        from orbit.service.registration_checks import check_registration

        item = definition_or_path_or_function
        if isinstance(item, dict):
            wf = parse_definition(item)
        elif isinstance(item, (str, Path)):
            wf = load_definition(item)
        elif hasattr(item, "name") and hasattr(item, "version") and callable(getattr(item, "fn", None)):
            wf = item  # an @orbit.workflow code workflow
        else:
            raise OrbitError(
                f"cannot register {item!r}: pass a definition path, text or dict, "
                "or a function decorated with @orbit.workflow"
            )
        check_registration(self.engine, wf)  # an inline step's timeout must fit in the decider's
        self.engine.registry.register(wf)
        from orbit.service.triggers import sync_triggers

        sync_triggers(self.engine, str(wf.name))  # its rules on the local EventBridge (docs/triggers.md)
        return str(wf.name)

    def retire(self, name: str, version: str | None = None) -> list[str]:
        """Refuse new starts of a definition's `version` (every version when None); running executions
        finish. Returns the versions retired (`orbit retire`)."""
        from orbit.service.triggers import sync_triggers

        retired = list(self.engine.registry.retire(name, version))
        sync_triggers(self.engine, name)
        return retired

    def workflows(self) -> list[dict[str, Any]]:
        """The registered workflows with their versions (`orbit workflows`)."""
        return list(self.engine.workflows())

    def start(self, name: str, input: Any = None, id: str | None = None, version: str | None = None,
              priority: int | None = None) -> str:
        # As the API function does: a start decides inline, and a first decision that fans
        # out leaves in one SendMessageBatch per 10 messages instead of one SendMessage each.
        with self.services.queues.batched():
            return str(self.engine.start(name, version, input if input is not None else {}, id,
                                         priority=priority))

    def describe(self, id: str) -> dict[str, Any]:
        return self.engine.describe(id)

    def history(self, id: str) -> list[dict[str, Any]]:
        return self.engine.history(id)

    def signal(self, id: str, name: str, payload: Any = None) -> str:
        return self.engine.signal(id, name, payload)

    def signal_with_start(self, id: str, workflow: str, name: str, payload: Any = None, input: Any = None,
                          signal_id: str | None = None) -> dict[str, Any]:
        """Signal `id`, starting it (a run of `workflow`) first if it does not exist (docs/triggers.md)."""
        from orbit.service.signal_start import signal_with_start

        with self.services.queues.batched():
            return signal_with_start(self.engine, id, workflow, name, payload, input, signal_id=signal_id)

    def query(self, id: str, name: str, input: Any = None) -> Any:
        """One of the execution's declared queries (orbit/service/queries.py); records nothing."""
        from orbit.service.queries import run_query

        return run_query(self.engine, id, name, input)

    def update(self, id: str, name: str, input: Any = None, update_id: str | None = None,
               timeout: float = 10.0) -> Any:
        """A durable update (docs/updates.md): validated, recorded once per `update_id`, handled;
        returns its result (UpdateRefused, UpdateFailed, UpdateTimedOut, ExecutionEnded otherwise).
        The queues are pumped while it waits (virtual time does not move)."""
        from orbit.errors import update_result
        from orbit.service.updates import submit, wait

        uid = submit(self.engine, id, name, input, update_id)
        pump = lambda: self.cloud.run_until_idle(auto_advance=False)  # noqa: E731
        return update_result(wait(self.engine, id, uid, timeout, pump), timeout)

    def resume_hook(self, token: str, payload: Any = None) -> str:
        return self.engine.resume_hook(token, payload)

    def cancel(self, id: str, reason: str = "", force: bool = False) -> None:
        self.engine.cancel(id, reason, force)

    def redrive(self, id: str, request_id: str | None = None) -> dict[str, Any]:
        """Continue a FAILED or TIMED_OUT execution where it stopped (see docs/recovery.md);
        returns {id, redrive_count, steps}. Refused (RedriveRefused) with the reason otherwise."""
        with self.services.queues.batched():
            return dict(self.engine.redrive(id, request_id))

    def fork(self, execution_id: str, /, from_step: str, id: str | None = None,
             version: str | None = None) -> str:
        """Start a new execution that reuses the outputs of the steps of `execution_id` that ended
        before `from_step` and runs the rest on the workflow registered now; returns the new id."""
        with self.services.queues.batched():
            return str(self.engine.fork(execution_id, from_step, id, version))

    def batch(self, action: str, where: str, id: str | None = None, **args: Any) -> dict[str, Any]:
        """A bulk action (`orbit batch`, docs/operations.md): runs as the stack's queues are pumped."""
        return dict(self.engine.batches.create(action, where, args, id))

    def describe_batch(self, id: str) -> dict[str, Any]:
        return dict(self.engine.batches.describe(id))

    def pause(self, id: str, reason: str = "") -> str:
        """Hold an execution (`orbit pause`); recorded when the queues are pumped."""
        return self.engine.pause(id, reason)

    def unpause(self, id: str, reason: str = "") -> str:
        """Let a paused execution go on (`orbit unpause`)."""
        return self.engine.unpause(id, reason)

    def unpark(self, id: str) -> str:
        """Try a parked execution again now (it runs when the queues are pumped: `run_until_idle`)."""
        return self.engine.unpark(id)

    def deploy(self, *workflows: Any) -> list[str]:
        """Replace the code builds the deciders hold with `workflows`, as a new Lambda deployment
        does: every code workflow registered before is dropped (definitions stay registered),
        and executions pinned to a dropped build replay on the new one at their next decision
        (see docs/evolution.md). Returns the names deployed."""
        from orbit.workflow import CodeWorkflow

        bad = [w for w in workflows if not isinstance(w, CodeWorkflow)]
        if bad:
            raise OrbitError(f"deploy takes @orbit.workflow functions; got {bad[0]!r}")
        from orbit.service.replay_host import default_runtime

        self.engine.registry.deploy(workflows)
        default_runtime().forget()  # paused instances of the old builds go with the old code
        return [w.name for w in workflows]

    def list(
        self, workflow: str | None = None, status: str | None = None, limit: int = 50,
        started_after: str | int | None = None, started_before: str | int | None = None,
        where: dict[str, Any] | str | None = None,
    ) -> list[dict[str, Any]]:
        """Newest first; `started_after` (inclusive) / `started_before` (exclusive) are RFC 3339
        times (or milliseconds since the epoch), `where` a filter (docs/operations.md) or search
        attributes that must all match (`{"tier": "gold"}`).
        Pages are followed until `limit` entries."""
        from orbit.service.http import instant

        after, before = instant(started_after, "started_after"), instant(started_before, "started_before")
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        while len(out) < limit:
            entries, cursor = self.engine.list(workflow, status, limit - len(out), cursor,
                                               started_after_ms=after, started_before_ms=before, where=where)
            out += [e.to_dict() for e in entries]
            if cursor is None:
                break
        return out

    # ------------------------------------------------------------------ time
    def now_ms(self) -> int:
        return clock.now_ms()

    def run_until_idle(self, wall_timeout_s: float = 120.0) -> None:
        """Pump queues and fire due timers until nothing is left to do now (with
        `auto_advance`, idle waits jump to the next timer instead of stopping)."""
        self.cloud.run_until_idle(auto_advance=self.auto_advance, wall_timeout_s=wall_timeout_s)

    def advance(self, seconds: float) -> None:
        """Move virtual time forward, then run what became due (schedules fire at each of their
        occurrences on the way, in order)."""
        target = clock.now_ms() + int(seconds * 1000)
        self._advance_through_schedules(target)
        clock.advance_ms(max(0, target - clock.now_ms()))
        self.cloud.run_until_idle(auto_advance=False)

    def run_until_done(
        self,
        id: str,
        on_progress: Callable[[dict[str, Any], int], None] | None = None,
        wall_timeout_s: float = 300.0,
        real_time: bool = False,
    ) -> dict[str, Any]:
        """Run (skipping idle time, or in real time: waiting for it) until execution `id` ends;
        returns its description. Raises TimeoutError after `wall_timeout_s` of wall time."""
        last: dict[str, Any] = {}
        seen = [-1]
        checked_at = [0.0]
        interval = [0.2]

        def done(force: bool = False) -> bool:
            # Reading the state costs a DynamoDB load that grows with the execution (a 1,000-unit
            # fan-out): look only after handlers ran, not too often while the pump is busy,
            # and always before the runner stops or jumps time.
            invocations = sum(p.invocations for p in self.cloud.pollers)
            # spend at most ~1/6 of the time reading: wait 5x what the last read cost (>= 0.2 s)
            busy_recently = time.monotonic() - checked_at[0] < interval[0] and not self.cloud.idle
            if last and not force and (invocations == seen[0] or busy_recently):
                return False
            seen[0], t0 = invocations, time.monotonic()
            last.update(self.describe(id))
            checked_at[0] = time.monotonic()
            interval[0] = max(0.2, 5 * (checked_at[0] - t0))
            if on_progress:
                on_progress(last, clock.now_ms())
            return last["status"] in TERMINAL

        if real_time:
            self._run_in_real_time(done, lambda: done(force=True), wall_timeout_s)
        else:
            self.cloud.run_until_idle(auto_advance=True, until=done, wall_timeout_s=wall_timeout_s)
        if not done(force=True):
            from .waiting import waiting

            found = waiting(last, self.history(id))
            waits = [f"{w.unit}: {w.text}" for w in found]
            todo = ("register a worker function for its task (@orbit.worker.task) and advance the clock"
                    if any(w.kind == "worker" for w in found)
                    else "send the signal it waits for (orbit run --signal NAME=JSON)")
            raise OrbitError(
                f"execution {id} is {last['status']} and nothing more will happen on its own "
                f"(waiting: {'; '.join(waits) or '-'}); {todo}, or cancel it"
            )
        return last

    def _run_in_real_time(self, done: Callable[[], bool], ended: Callable[[], bool],
                          wall_timeout_s: float) -> None:
        """Pump what is due, then sleep until the next thing will happen (a timer, a delayed or
        reappearing message), as a deployed stack would; returns when `done()` or nothing is due."""
        deadline = time.monotonic() + wall_timeout_s
        while True:
            left = deadline - time.monotonic()
            self.cloud.run_until_idle(auto_advance=False, until=done, wall_timeout_s=max(left, 0.01))
            if ended():
                return
            wake = self.cloud.next_wake_ms()
            if wake is None:
                return  # nothing will happen on its own: the caller says what it waits for
            pause = max(wake - clock.now_ms(), 5) / 1000.0
            if time.monotonic() + pause > deadline:  # say so now, not after waiting in vain
                after = fmt_duration(int(pause * 1000))
                raise NothingDueInTime(f"nothing is due before {utc(wake)}, {after} from now")
            time.sleep(min(pause, 0.5))  # real time is the point
