"""Testing aids for users: the in-memory `simulator` (orbit.Simulator).

Imports the core, the service and the in-memory adapters; never boto3."""
