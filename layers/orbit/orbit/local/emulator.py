"""moto as the local AWS: a real HTTP endpoint on loopback (default) or in process.

Server mode is what `orbit dev` and `orbit run` use: the handlers talk HTTP to
127.0.0.1 through botocore exactly as they talk to AWS, and other processes
(the CLI, a browser) can reach the same endpoint. In-process mode patches
botocore instead and skips the HTTP round trip; tests use it because it is
about 3x faster (LOCAL-AWS-FACTS).

Either way moto keeps its state in process-wide backends, so the local stack
can also look at them directly (for example to find when the next in-flight
SQS message becomes visible again).
"""

from __future__ import annotations

import logging
import os
from typing import Any, Literal

from botocore import UNSIGNED
from botocore.handlers import BUILTIN_HANDLERS
from moto.core.models import BackendDict

from . import clock, moto_speed

Mode = Literal["server", "inprocess"]

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account

# Credentials are fake and only for moto; they never leave loopback.
_FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "orbit-local",
    "AWS_SECRET_ACCESS_KEY": "orbit-local",
    "AWS_SESSION_TOKEN": "orbit-local",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}
_CLEARED = ("AWS_PROFILE", "AWS_ENDPOINT_URL")


class Emulator:
    def __init__(self, mode: Mode = "server", port: int = 0) -> None:
        if mode not in ("server", "inprocess"):
            raise ValueError(f"emulator mode must be 'server' or 'inprocess', not {mode!r}")
        self.mode: Mode = mode
        self.port = port
        self.endpoint_url: str | None = None
        self._server: Any = None  # moto.server.ThreadedMotoServer, imported when used
        self._mock: Any = None
        self._saved_env: dict[str, str | None] = {}

    def env(self) -> dict[str, str]:
        """The variables every handler and client in this process needs to reach the emulator."""
        out = dict(_FAKE_ENV)
        if self.endpoint_url:
            out["AWS_ENDPOINT_URL"] = self.endpoint_url
        return out

    def start(self) -> None:
        clock.install_into_moto()
        moto_speed.install()  # after the clock swap: the fixes read moto's (virtual) clock
        for key in (*_FAKE_ENV, *_CLEARED):
            self._saved_env[key] = os.environ.get(key)
        for key in _CLEARED:
            os.environ.pop(key, None)
        os.environ.update(_FAKE_ENV)
        if self.mode == "server":
            from moto.server import ThreadedMotoServer

            logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request

            BackendDict.reset()  # a fresh account per stack, as a new deployment would be
            self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
            self._server.start()
            host, port = self._server.get_host_and_port()
            self.port = port
            self.endpoint_url = f"http://{host}:{port}"
            os.environ["AWS_ENDPOINT_URL"] = self.endpoint_url
        else:
            from moto import mock_aws

            self._mock = mock_aws()
            self._mock.start(reset=True)
            _unsigned_in_process(+1)


    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._mock is not None:
            _unsigned_in_process(-1)
            self._mock.stop()
            self._mock = None
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env.clear()


# In-process mode: DynamoDB and SQS requests go unsigned (botocore's UNSIGNED signature version).
# The credentials are fake and moto's DynamoDB and SQS never read the Authorization header (their
# region comes from the URL, the account from MOTO_ACCOUNT_ID or the default), so what reaches the
# backends is the same; SigV4 signing was ~0.6 ms of CPU per request. S3 stays signed (moto treats an
# unsigned S3 request as anonymous and checks bucket policies), presigned URLs too, and server mode,
# whose requests cross HTTP like AWS's, is untouched. Deployed clients never see this hook: it is
# registered only when an in-process emulator starts, and answers only while one runs.
_UNSIGNED_SERVICES = frozenset({"dynamodb", "sqs"})
_in_process = 0


def _choose_unsigned(signing_name: str = "", signature_version: object = None, **_: object) -> object:
    if _in_process > 0 and signing_name in _UNSIGNED_SERVICES and signature_version == "v4":
        return UNSIGNED
    return None


def _unsigned_in_process(delta: int) -> None:
    """Count running in-process emulators; the first start registers the hook for new botocore sessions."""
    global _in_process
    _in_process = max(0, _in_process + delta)
    if ("choose-signer", _choose_unsigned) not in BUILTIN_HANDLERS:
        BUILTIN_HANDLERS.insert(0, ("choose-signer", _choose_unsigned))  # before botocore's own choice
