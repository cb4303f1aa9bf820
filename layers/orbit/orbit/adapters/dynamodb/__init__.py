"""DynamoDB adapters over one table (see template.yaml for its keys and indexes).

A package rather than one module only to keep each file to one idea; it is the
one adapter for the DynamoDB service: history + index + hooks (`history`),
timers (`timers`), definitions (`registry`), worker idempotency (`idempotency`).
"""

from orbit.adapters.dynamodb.history import DynamoHistoryStore
from orbit.adapters.dynamodb.idempotency import Claim, IdempotencyStore
from orbit.adapters.dynamodb.registry import DynamoRegistry
from orbit.adapters.dynamodb.timers import DynamoTimers

__all__ = ["DynamoHistoryStore", "DynamoTimers", "DynamoRegistry", "IdempotencyStore", "Claim"]
