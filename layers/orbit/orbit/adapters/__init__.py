"""Adapters, one per AWS service (`dynamodb/`, `sqs`, `s3`), in-memory ones (`memory`), payload refs.

Each implements a port of `orbit.service.ports`; may import the core, the ports, boto3; never the service."""
