"""The pure core: history, decider, runtimes and definitions. No I/O, clock, randomness or AWS.

May import only `orbit.core.*`, `orbit.errors` and pure libraries; tests/unit/test_layers.py checks it."""
