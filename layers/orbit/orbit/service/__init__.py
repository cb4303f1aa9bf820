"""The service: load, decide, commit, carry out (`engine`), the outbox, the read/control operations,
the HTTP routing, and the ports it needs. Imports the core and the ports, never an adapter or boto3."""
