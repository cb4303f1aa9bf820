"""The crash matrix around the timers sweep's hand-over to SQS (docs/decisions/timers-on-the-second.md).

Scenario: a 2-hour sleep, then a 20-minute one, then a compute step. Both sleeps are beyond SQS's
15-minute delay, so each is a table timer that the timers function hands to SQS, delayed to its
second, once it is due within the lead (`ORBIT_TIMERS=sqs-delay`, `ORBIT_TIMER_LEAD_S=900`: the AWS
defaults). moto's SQS reads this world's virtual clock, so DelaySeconds hold on it. The timers
function runs when the next table timer comes within the lead (its minute tick; one that died runs
again a minute later, as the schedule would).

A crash before or after each write and send (the hand-over's SendMessage and its two deletes
among them) must leave what crash_matrix.check asks of every run (completed once, each timer fired
once, nothing left on the queues) and: no table timer left, no timer fired before its time, and
every timer fired within a second of it (a crash in the sweep retries a minute later, still well
inside the 15-minute lead), unless a decider died handling its wake (then the wake comes back after
the decision queue's visibility timeout, as any message does).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager

from aws_resources import Clients, create_stack
from crash_points import CrashPoint, Recorder
from crash_world import EXECUTION, Scenario, World
from moto import mock_aws
from orbit.aws import wiring as aws

LEAD_MS = 900_000
NAPS = Scenario(({"orbit": 1, "name": "crash-naps", "version": "1",
                  "steps": {"nap": {"sleep": "2h"}, "nap2": {"sleep": "20m", "after": ["nap"]},
                            "done": {"compute": "{% 'rested' %}", "after": ["nap2"]}},
                  "output": "{% steps.done.output %}"},), {})


class TimerWorld(World):
    def next_delayed_ms(self) -> int | None:
        """When the next delayed message on moto's queues becomes visible (virtual ms)."""
        from moto.sqs.models import sqs_backends

        now = self.clock.now
        messages = [m for regions in sqs_backends.values() for b in regions.values()
                    for q in b.queues.values() for m in q._messages]
        times = [int(m.delayed_until) + 1 for m in messages if m.delayed_until and m.delayed_until >= now]
        return min(times, default=None)

    def settle(self, max_rounds: int = 400) -> None:
        for _ in range(max_rounds):
            if self.pump("DecisionQueue") or self.release_due():
                continue
            fire = self.container().table_timers.next_fire_ms()
            if fire is not None and fire - LEAD_MS <= self.clock.now:
                self.fire_timers()  # the minute tick that finds it within the lead
                continue
            later = [p.due_ms for p in self.parked] + ([fire - LEAD_MS] if fire is not None else [])
            delayed = self.next_delayed_ms()
            later += [delayed] if delayed is not None else []
            if later:
                self.clock.now = max(self.clock.now, min(later))
                continue
            return
        raise AssertionError(f"the system did not settle in {max_rounds} rounds")


@contextmanager
def timer_world(clients: Clients, recorder: Recorder, crash_at: CrashPoint | None) -> Iterator[TimerWorld]:
    import moto.sqs.models as sqs_models

    saved = dict(os.environ)
    saved_time = sqs_models.unix_time, sqs_models.unix_time_millis
    with mock_aws():
        stack = create_stack(clients.dynamodb, clients.sqs, clients.s3)
        os.environ.update({**stack.env(), "ORBIT_TIMERS": "sqs-delay", "ORBIT_TIMER_LEAD_S": "900",
                           "ORBIT_ARCHIVE_DAYS": "365"})
        world = TimerWorld(clients, recorder, stack, NAPS, crash_at)
        # SQS on the world's clock: a delayed wake becomes visible when the virtual clock says so
        # (plus a microsecond per call: moto shows a message only once the time is strictly past its
        # visible_at, which on a clock that stands still never comes for a visibility set to 0)
        ticks = itertools.count()
        sqs_models.unix_time_millis = lambda: world.clock.now + next(ticks) / 1000  # type: ignore[assignment]
        sqs_models.unix_time = lambda: sqs_models.unix_time_millis() / 1000  # type: ignore[assignment]
        try:
            yield world
        finally:
            sqs_models.unix_time, sqs_models.unix_time_millis = saved_time  # type: ignore[assignment]
            recorder.arm(None)
            aws.reset()
            os.environ.clear()
            os.environ.update(saved)


def lateness(world: TimerWorld) -> dict[str, int]:
    """Each sleep's TimerFired time less its fire time (ms)."""
    h = world.container().engine.history(EXECUTION)
    due = {e["step"]: int(e["fire_at_ms"]) for e in h if e["type"] == "TimerStarted"}
    return {e["step"]: int(e["timestamp_ms"]) - due[e["step"]] for e in h if e["type"] == "TimerFired"}


def timer_problems(world: TimerWorld) -> list[str]:
    out = []
    late = lateness(world)
    # A decider that dies handling the wake leaves it to come back after the queue's visibility
    # timeout; any other crash (the sweep's among them) leaves every timer on its second.
    died = any(c.handler == "decider" for c in world.crashes)
    bound = 1_000 + (world.visibility_ms["DecisionQueue"] if died else 0)
    if sorted(late) != ["nap", "nap2"] or not all(0 <= ms <= bound for ms in late.values()):
        out.append(f"timers fired {late} ms after their time (want each once, within 0..{bound})")
    left = world.container().table_timers.due(world.clock.now + 365 * 86_400_000)
    if left:
        out.append(f"table timers left: {left}")
    return out
