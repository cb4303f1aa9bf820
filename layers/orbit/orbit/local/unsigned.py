"""In-process emulators: DynamoDB and SQS requests unsigned (a speed fix, see below)."""

from __future__ import annotations

from botocore import UNSIGNED
from botocore.handlers import BUILTIN_HANDLERS

from .patch_registry import on_undo

# In-process mode: DynamoDB and SQS requests go unsigned (botocore's UNSIGNED signature version).
# The credentials are fake and moto's DynamoDB and SQS never read the Authorization header (their
# region comes from the URL, the account from MOTO_ACCOUNT_ID or the default), so what reaches the
# backends is the same; SigV4 signing was ~0.6 ms of CPU per request. S3 stays signed (moto treats an
# unsigned S3 request as anonymous and checks bucket policies), presigned URLs too, and server mode,
# whose requests cross HTTP like AWS's, is untouched. Deployed clients never see this hook: it is
# in botocore's list only while a stack runs (`patches.applied()`), and answers only while an
# in-process emulator runs.
_UNSIGNED_SERVICES = frozenset({"dynamodb", "sqs"})
_in_process = 0


def _choose_unsigned(signing_name: str = "", signature_version: object = None, **_: object) -> object:
    if _in_process > 0 and signing_name in _UNSIGNED_SERVICES and signature_version == "v4":
        return UNSIGNED
    return None


def in_process(delta: int) -> None:
    """Count running in-process emulators (the hook answers only while one runs)."""
    global _in_process
    _in_process = max(0, _in_process + delta)


def register() -> None:
    """Put the hook first in botocore's BUILTIN_HANDLERS for new sessions (a speed fix, inside
    `patches.applied()`, which removes it again). Sessions made meanwhile keep it: it answers None
    once no in-process emulator runs."""
    entry = ("choose-signer", _choose_unsigned)
    if entry in BUILTIN_HANDLERS:
        return
    BUILTIN_HANDLERS.insert(0, entry)  # before botocore's own choice

    def remove() -> None:
        if entry in BUILTIN_HANDLERS:
            BUILTIN_HANDLERS.remove(entry)

    on_undo(remove)
