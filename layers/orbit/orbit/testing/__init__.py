"""Testing aids for users: the in-memory `simulator` (orbit.Simulator) and
`orbit.testing.replay(history, workflow)`, which checks in pytest that a recorded
history replays on the current code.

Imports the core, the service and the in-memory adapters; never boto3."""

from orbit.testing.replay import replay

__all__ = ["replay"]
