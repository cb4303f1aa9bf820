"""Test helpers for Orbit users: `orbit.testing.replay(history, workflow)` for pytest."""

from orbit.testing.replay import replay

__all__ = ["replay"]
