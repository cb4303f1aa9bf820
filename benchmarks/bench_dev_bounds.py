"""`orbit dev`'s origin checks and its bound on caller code, measured
(docs/decisions/sec-http-origin-and-bounds.md).

    .venv/bin/python benchmarks/bench_dev_bounds.py        (about 15 s)

On a server-mode local stack behind a DevServer: the time of a request that passes the origin
checks and of one they refuse (300 each); then a code workflow's query handler that loops: when
its USER_CODE_TIMEOUT answer comes, and how long a start sent meanwhile takes.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import orbit
from orbit.local import LocalStack
from orbit.local.devserver import DevServer


@orbit.workflow("bench-loops", version="1")
def loops(ctx: Any, input: Any) -> Any:
    def spin(_: Any) -> Any:
        while True:
            pass

    ctx.query_handler("spin", spin)
    ctx.wait_for("never")


def call(dev: DevServer, method: str, path: str, body: Any = None,
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(dev.url + path, data=data, method=method,
                                 headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def timed(fn: Any) -> tuple[Any, float]:
    began = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - began


def main() -> None:
    with LocalStack(mode="server") as stack:
        stack.register({"orbit": 1, "name": "quick", "version": "1", "steps": {"a": {"compute": "{% 1 %}"}}})
        stack.register(loops)
        dev = DevServer(stack, port=0)
        threading.Thread(target=dev.serve_forever, daemon=True).start()
        for label, headers in (("passes the checks", {}), ("is refused (foreign Origin)",
                                                            {"origin": "http://127.0.0.1:9"})):
            _, took = timed(lambda h=headers: [call(dev, "GET", "/executions/none", headers=h)
                                               for _ in range(300)])
            print(f"a request that {label}: {took / 300 * 1000:.2f} ms")
        call(dev, "POST", "/executions", {"workflow": "bench-loops", "id": "spinner"})
        time.sleep(1)
        out: dict[str, Any] = {}

        def ask() -> None:
            spin = "/executions/spinner/queries/spin"
            out["answer"], out["took"] = timed(lambda: call(dev, "POST", spin, {}))

        asker = threading.Thread(target=ask)
        asker.start()
        time.sleep(0.5)
        (status, _), other = timed(lambda: call(dev, "POST", "/executions", {"workflow": "quick"}))
        asker.join()
        code = out["answer"][1]["error"]["code"]
        print(f"looping query: {out['answer'][0]} {code} after {out['took']:.2f} s; "
              f"a start meanwhile: {status} in {other * 1000:.0f} ms")


if __name__ == "__main__":
    main()
