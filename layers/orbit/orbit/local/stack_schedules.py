"""`LocalStack`'s schedule operations (a mixin): the same ScheduleService the API function uses."""

from __future__ import annotations

from typing import Any

from . import clock

DEFAULT_CATCHUP = "1h"


class ScheduleOps:
    services: Any
    cloud: Any

    @property
    def schedules(self) -> Any:
        return self.services.schedules

    def create_schedule(
        self,
        schedule_id: str,
        workflow: str,
        input: Any = None,
        *,
        cron: str | None = None,
        every: Any = None,
        offset: Any = None,
        timezone: str = "UTC",
        start: str | None = None,
        end: str | None = None,
        jitter: Any = None,
        exclude: list[Any] | None = None,
        overlap: str = "skip",
        catchup_window: Any = DEFAULT_CATCHUP,
        pause_on_failure: bool = False,
        version: str | None = None,
    ) -> dict[str, Any]:
        raw = {"id": schedule_id, "workflow": workflow, "version": version, "input": input, "cron": cron,
               "every": every, "offset": offset, "timezone": timezone, "start": start, "end": end,
               "jitter": jitter, "exclude": exclude, "overlap": overlap, "catchup_window": catchup_window,
               "pause_on_failure": pause_on_failure}
        return dict(self.schedules.create({k: v for k, v in raw.items() if v is not None}))

    def update_schedule(self, schedule_id: str, **changes: Any) -> dict[str, Any]:
        """Change some fields; the others keep their values."""
        from orbit.core.schedule.changes import merged_config

        raw = merged_config(self.schedules.describe(schedule_id), changes)
        return dict(self.schedules.update(schedule_id, raw))

    def describe_schedule(self, schedule_id: str) -> dict[str, Any]:
        return dict(self.schedules.describe(schedule_id))

    def list_schedules(self, limit: int = 50) -> list[dict[str, Any]]:
        return list(self.schedules.list(limit)[0])

    def pause_schedule(self, schedule_id: str, note: str = "") -> dict[str, Any]:
        return dict(self.schedules.pause(schedule_id, note))

    def resume_schedule(self, schedule_id: str, note: str = "") -> dict[str, Any]:
        return dict(self.schedules.resume(schedule_id, note))

    def trigger_schedule(self, schedule_id: str, overlap: str | None = None) -> str | None:
        with self.services.queues.batched():
            return self.schedules.trigger(schedule_id, overlap)

    def backfill_schedule(
        self, schedule_id: str, start: str, end: str, overlap: str | None = None
    ) -> list[str]:
        with self.services.queues.batched():
            return list(self.schedules.backfill(schedule_id, start, end, overlap))

    def delete_schedule(self, schedule_id: str) -> None:
        self.schedules.delete(schedule_id)

    def _advance_through_schedules(self, target_ms: int) -> None:
        """Step virtual time to each armed schedule fire up to `target_ms`, running what it starts,
        so `advance()` fires every due occurrence in order, each at its own time. The stack's other
        wake-ups on the way (a delayed message, such as a fire Scheduler delivered early and the
        decider delayed to its second, or the timers tick) are steps too."""
        at = self.cloud.at_schedules
        while at is not None:
            wakes = [t for t in (at.next_wake_ms(), self.cloud.next_wake_ms()) if t is not None]
            wake = min(wakes, default=None)
            now = clock.now_ms()
            if wake is None or wake > target_ms:
                return
            if wake > now:
                clock.advance_ms(wake - now)
            self.cloud.run_until_idle(auto_advance=False)
