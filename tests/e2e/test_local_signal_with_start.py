"""Signal-with-start on the local stack (docs/triggers.md): a burst of 50 concurrent calls for one id
makes one execution that receives all 50 signals, once each, in the order the calls were accepted."""

from __future__ import annotations

import os
import threading
import time

from orbit.local import LocalStack


def test_signal_with_start_under_50_concurrent_calls_makes_one_execution_with_50_signals_in_order() -> None:
    """Fifty callers, each with its own engine (as fifty API Lambda containers), on the moto server."""
    from orbit.aws.wiring import build_engine

    with LocalStack(mode="server") as st:
        st.register(
            {
                "orbit": 1,
                "name": "trig-cart",
                "version": "1",
                "signals": {"item": {}},
                "steps": {"w": {"wait_for": "checkout"}},
                "output": "{% steps.w.output %}",
            }
        )
        engines = [build_engine(dict(os.environ), clock=st.services.clock) for _ in range(50)]
        spans: dict[int, tuple[float, float]] = {}
        errors: list[BaseException] = []
        go = threading.Barrier(50)

        def call(i: int) -> None:
            from orbit.service.signal_start import signal_with_start

            go.wait()
            began = time.perf_counter()
            try:
                signal_with_start(
                    engines[i], "cart-1", "trig-cart", "item", {"n": i}, {"cart": 1}, signal_id=f"s-{i}"
                )
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
            spans[i] = (began, time.perf_counter())

        threads = [threading.Thread(target=call, args=(i,)) for i in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[:3]
        assert [e["execution_id"] for e in st.list(workflow="trig-cart")] == ["cart-1"]
        got = [e["payload"]["n"] for e in st.history("cart-1") if e["type"] == "SignalReceived"]
        assert sorted(got) == list(range(50))  # every signal once
        position = {n: k for k, n in enumerate(got)}
        for i, (_, ended) in spans.items():  # a call that returned before another began is earlier
            for j, (began, _) in spans.items():
                if ended < began:
                    assert position[i] < position[j], (i, j)
