"""The delivery model (tests/unit/delivery_model.py) run by hypothesis, and its scripted checks.

CI runs a small profile (`ORBIT_MODEL_PROFILE` unset: 150 examples, a few seconds);
`ORBIT_MODEL_PROFILE=long` runs 2,000 examples of up to 80 steps (about two minutes);
`ORBIT_MODEL_EXAMPLES=N` sets the count of either. docs/decisions/model24-delivery-model.md.
"""

from __future__ import annotations

import os

from delivery_model import DeliveryModel, WatchedTimers
from hypothesis import HealthCheck, settings

settings.register_profile(
    "delivery-model-ci", max_examples=int(os.environ.get("ORBIT_MODEL_EXAMPLES", "150")),
    stateful_step_count=40,
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile(
    "delivery-model-long", max_examples=int(os.environ.get("ORBIT_MODEL_EXAMPLES", "2000")),
    stateful_step_count=80,
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
PROFILE = "delivery-model-" + os.environ.get("ORBIT_MODEL_PROFILE", "ci")  # ci or long

DeliveryModel.TestCase.settings = settings.get_profile(PROFILE)
TestDeliveryModel = DeliveryModel.TestCase


# ------------------------------------------------------------------ the model's checks can fail
class OldTimers(WatchedTimers):
    """The timer row before finding 2's fix: every arm replaced it, whatever commit it came from."""

    def arm(self, execution_id: str, fire_at_ms: int, seq: int | None = None) -> None:
        with self._lock:
            self._at[execution_id] = fire_at_ms
            self._seq[execution_id] = seq if seq is not None else -1
        if seq is not None:
            self.newest[execution_id] = max(seq, self.newest.get(execution_id, seq))


def _finding_2(model: DeliveryModel) -> None:
    """Finding 2 as rules: the delete of the result that started the 30-day wait is lost; the
    signal starts the 16-minute sleep; the result comes back and its commit's effects are re-sent."""
    model.start(["signal-sleep"])  # committed by the API: the 2-minute sleep is armed
    model.advance(181_000)
    model.fire_timers(0)
    model.deliver(0, 0)  # its wake: `first` is dispatched
    model.run_task(0, False)
    model.deliver_lose_delete(1, 0)  # the result: the 30-day wait timeout is armed; delete lost
    model.signal(0)
    model.deliver(0, 0)  # the signal: the 16-minute sleep is armed
    model.timer_never_older_than_its_newest_arm()
    model.advance(181_000)
    model.deliver(1, 0)  # the result again (receive 2): recovery re-sends its commit's effects
    model.timer_never_older_than_its_newest_arm()
    model.no_lost_wakeup()


def test_the_model_reports_finding_2_on_the_old_timer_row() -> None:
    model = type("Old", (DeliveryModel,), {"timers_class": OldTimers})()
    try:
        _finding_2(model)
    except AssertionError as e:
        assert "a newer commit" in str(e)
    else:
        raise AssertionError("the old timer row went unnoticed")


def test_the_model_finding_2_control_passes_and_ends() -> None:
    model = DeliveryModel()
    _finding_2(model)
    model.teardown()
    assert model.store.load("signal-sleep-0").fold().status == "COMPLETED"


def _finding_1(model: DeliveryModel) -> None:
    """Finding 1 as rules, no fault: environment 1 caches the execution at its wait; environment 2
    takes the signal and the 16-minute sleep starts; the sleep's wake reaches environment 1."""
    model.start(["signal-sleep"])
    model.advance(181_000)
    model.fire_timers(0)
    model.deliver(0, 0)  # the 2-minute sleep's wake: `first` is dispatched
    model.run_task(0, False)
    model.deliver(0, 0)  # its result: the wait starts; environment 1's cache stops here
    model.signal(1)
    model.deliver(1, 0)  # environment 2: the signal, the 16-minute sleep is armed
    model.advance(961_000)
    model.fire_timers(1)
    model.deliver(0, 0)  # the sleep's wake, decided by environment 1
    model.no_lost_wakeup()
    model.no_lost_dispatch()


def test_the_model_reports_finding_1_without_the_head_check() -> None:
    model = DeliveryModel()
    model.engines[0]._cache.overtaken = lambda eid, state: False  # type: ignore[method-assign]
    try:
        _finding_1(model)
    except AssertionError as e:
        assert "needs a wake-up" in str(e)
    else:
        raise AssertionError("the lost sleep went unnoticed")


def test_the_model_finding_1_control_passes_and_ends() -> None:
    model = DeliveryModel()
    _finding_1(model)
    model.teardown()
    assert model.store.load("signal-sleep-0").fold().status == "COMPLETED"
