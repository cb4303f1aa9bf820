"""The local cloud: emulator + template resources + event source mappings + schedules.

`LocalCloud` knows nothing about workflows: it deploys a template on moto and
drives its functions. `run_until_idle()` pumps every mapped queue and fires
due schedules until nothing is left to do now; with `auto_advance` it then
jumps virtual time to the next thing that will happen (an in-flight message
becoming visible again, a delayed message, an armed durable timer) and goes on,
so waits cost no wall time.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import boto3

from . import clock
from .at_schedules import AtSchedules
from .cfn import TemplateError
from .emulator import Emulator, Mode
from .lambdas import EmfFilter, load_handler
from .pump import PollResult, QueuePoller
from .resources import Deployment, deploy
from .scheduler import Scheduler

log = logging.getLogger("orbit.local")

NextTimer = Callable[[], "int | None"]
DRAIN_BATCHES = 100  # batches one queue may take per round before the next queue's turn


class LocalCloud:
    def __init__(
        self,
        template: str | Path,
        mode: Mode = "server",
        port: int = 0,
        parameters: dict[str, str] | None = None,
        stack_name: str = "orbit-local",
        env_overrides: dict[str, str] | None = None,
        concurrent: bool = False,
        logs_to_stderr: bool = False,
        apps: list[str | Path] | tuple[str | Path, ...] = (),
    ) -> None:
        self.template = Path(template)
        self.apps = list(apps)  # app directories deployed after Orbit (local/apps.py)
        self.app_deployments: list[Deployment] = []
        self.app_resources: dict[str, dict[str, Any]] = {}  # logical id -> custom resource answer
        # Run mappings with ScalingConfig.MaximumConcurrency that many invocations at a time (as
        # Lambda does); off: one at a time, which honours any cap and keeps runs reproducible.
        self.concurrent = concurrent
        self.emulator = Emulator(mode, port)
        self.parameters = parameters or {}
        self.env_overrides = env_overrides or {}  # local-only additions to every function's environment
        self.logs_to_stderr = logs_to_stderr
        self.stack_name = stack_name
        self.deployment: Deployment | None = None
        self.pollers: list[QueuePoller] = []
        self.scheduler: Scheduler | None = None
        self.at_schedules: AtSchedules | None = None
        self.handlers: dict[str, Any] = {}
        self.next_timer: NextTimer = lambda: None
        self.errors: list[tuple[str, BaseException]] = []
        self.on_poll: Callable[[QueuePoller, PollResult], None] | None = None
        self.stats = {"polls": 0, "messages": 0, "jumps": 0, "skipped_ms": 0}
        self.idle = False
        self._stdout: Any = None

    # ------------------------------------------------------------------ life cycle
    def start(self) -> Deployment:
        if not isinstance(sys.stdout, EmfFilter):
            # What the handlers print (powertools' JSON log lines, a worker's print()) is a log: the
            # CLI sends it to stderr, so stdout stays the command's result (`orbit run --json`).
            self._stdout = sys.stdout
            sys.stdout = EmfFilter(sys.stderr if self.logs_to_stderr else sys.stdout)
        self.emulator.start()
        try:
            self.deployment = deploy(self.template, self.stack_name, self.parameters)
            for fn in self.deployment.functions.values():
                fn.env.update(self.env_overrides)
            os.environ.update(self.deployment.env())  # clients built outside handlers see the stack too
            sqs = boto3.client("sqs")
            for fn in self.deployment.functions.values():
                self.handlers[fn.logical_id] = load_handler(fn)
            mappings = list(self.deployment.mappings)
            self._deploy_apps()
            for app in self.app_deployments:
                mappings += app.mappings
            self.pollers = [QueuePoller(m, self.handlers[m.function.logical_id], sqs) for m in mappings]
            self.scheduler = Scheduler(
                [(r, self.handlers[r.function.logical_id]) for r in self.deployment.schedules], clock.now_ms()
            )
            self.at_schedules = AtSchedules(self.deployment, sqs)
        except BaseException:
            self.stop()  # emulator down, stdout and environment restored
            raise
        return self.deployment

    def _deploy_apps(self) -> None:
        """Each app's template after Orbit's: its workers join the pump (their environment stays
        their own: the engine this process shares reads Orbit's), its custom resources are created
        through Orbit's DefinitionsFunction."""
        from .apps import ResponseReceiver, app_template, create_custom, deploy_app, import_workflows

        assert self.deployment is not None
        if not self.apps:
            return
        receiver = ResponseReceiver()
        try:
            for app in self.apps:
                import_workflows(app_template(app))  # before its definitions: the decider holds them
                dep = deploy_app(app, self.deployment)
                for fn in dep.functions.values():
                    fn.env.update(self.env_overrides)
                    if fn.logical_id in self.handlers:
                        raise TemplateError(f"{app}: Resources.{fn.logical_id}: Orbit's template has a "
                                            "function of that name; rename the app's")
                    self.handlers[fn.logical_id] = load_handler(fn)
                self.app_deployments.append(dep)
                functions = {**self.deployment.functions, **dep.functions}
                self.app_resources.update(create_custom(dep, functions, self.handlers, receiver))
        finally:
            receiver.close()

    def stop(self) -> None:
        if self._stdout is not None:
            sys.stdout = self._stdout
            self._stdout = None
        if self.deployment is not None:
            for key in self.deployment.env():
                os.environ.pop(key, None)
        self.emulator.stop()
        # Back to wall time: the emulator's state is gone, and code that runs after this stack
        # in the same process (other tests, a later stack) expects moto's clock to be real.
        clock.reset()

    @property
    def console(self) -> Any:
        """The process's real stdout while handlers' output goes to stderr (for a command's result)."""
        return self._stdout if self._stdout is not None else sys.stdout

    # ------------------------------------------------------------------ driving
    def pump_once(self) -> int:
        """One round: fire due schedules, then drain every queue in turn. Returns messages handled.

        Each queue is polled batch after batch until it shows nothing visible (at most
        `DRAIN_BATCHES` batches, so one queue cannot starve the others), as Lambda's
        pollers keep invoking while a queue has messages. Draining, rather than one
        batch per queue per round, is what lets messages coalesce: the answers of a
        whole round of worker batches reach the decision queue before its next turn,
        so the decider gets full batches of 10 and commits once per execution per
        batch instead of once per worker invocation.
        """
        assert self.scheduler is not None, "start() the local cloud first"
        try:
            self.scheduler.fire_due(clock.now_ms())
            if self.at_schedules is not None:
                self.at_schedules.fire_due(clock.now_ms())
        except Exception as exc:  # noqa: BLE001 - EventBridge retries; we report and go on
            log.warning("scheduled function failed: %r", exc)
            self.errors.append(("schedule", exc))
        handled = 0
        for poller in self.pollers:
            cap = poller.mapping.max_concurrency or 1
            if cap > 1 and self.concurrent:
                handled += self._drain_concurrently(poller, cap)
                continue
            for _ in range(DRAIN_BATCHES):
                result = poller.poll_once()
                if not self._note(poller, result):
                    break
                handled += result.received
        self.stats["messages"] += handled
        return handled

    def _note(self, poller: QueuePoller, result: PollResult) -> bool:
        self.stats["polls"] += 1
        if not result.received:
            return False
        if result.error is not None:
            self.errors.append((poller.mapping.function.logical_id, result.error))
        if self.on_poll:
            self.on_poll(poller, result)
        return True

    def _drain_concurrently(self, poller: QueuePoller, cap: int) -> int:
        """A mapping with ScalingConfig.MaximumConcurrency: `cap` invocations at a time, each taking
        batch after batch, as Lambda's pollers do; never more than `cap` handlers run at once."""
        from concurrent.futures import ThreadPoolExecutor

        lock = threading.Lock()
        budget = [DRAIN_BATCHES]
        if isinstance(poller.sqs_lock, contextlib.nullcontext):
            poller.sqs_lock = threading.Lock()

        def drain() -> int:
            got = 0
            while True:
                with lock:
                    if budget[0] <= 0:
                        return got
                    budget[0] -= 1
                result = poller.poll_once()
                with lock:
                    if not self._note(poller, result):
                        return got
                got += result.received

        with ThreadPoolExecutor(max_workers=cap, thread_name_prefix="orbit-poller") as pool:
            return sum(pool.map(lambda _: drain(), range(cap)))

    def next_wake_ms(self) -> int | None:
        """When something will next happen without outside input (virtual ms), or None."""
        assert self.scheduler is not None
        candidates = [t for t in (clock.next_sqs_wake_ms(),) if t is not None]
        timer = self.next_timer()
        if timer is not None and self.deployment and self.deployment.schedules:
            # a durable timer is taken by the first schedule tick at or after `next_timer()` (its time
            # less the hand-over lead: LocalStack.open), as on AWS (never earlier than the next
            # unfired tick, so an overdue timer cannot spin the loop)
            sched = self.scheduler
            candidates.append(
                min(
                    max(sched.next_fire[r.name], sched.tick_at_or_after(r, timer))
                    for r in self.deployment.schedules
                )
            )
        return min(candidates, default=None)

    def advance(self, seconds: float) -> None:
        clock.advance_ms(int(seconds * 1000))

    def run_until_idle(
        self,
        auto_advance: bool = False,
        until: Callable[[], bool] | None = None,
        max_skip_ms: int | None = None,
        wall_timeout_s: float = 120.0,
    ) -> None:
        """Pump until nothing is left to do now (or `until()` holds).

        With `auto_advance`, an idle stack jumps virtual time to its next wake-up
        (at most `max_skip_ms` ahead) instead of stopping.
        """
        deadline = time.monotonic() + wall_timeout_s
        while True:
            if until is not None and until():
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the local stack was still busy after {wall_timeout_s:.0f} s of wall time"
                )
            self.idle = False
            if self.pump_once():
                continue
            self.idle = True  # lets `until` know this is the last look before stopping or jumping
            if until is not None and until():
                return
            if not auto_advance:
                return
            wake = self.next_wake_ms()
            now = clock.now_ms()
            if wake is None or (max_skip_ms is not None and wake - now > max_skip_ms):
                return
            if wake > now:
                self.stats["jumps"] += 1
                self.stats["skipped_ms"] += wake - now
                clock.advance_ms(wake - now)
