"""Caller text never reaches the terminal raw (issue 25, Low): a cancel reason and an error message
carrying escape sequences (retitle the window, clear the screen, reverse the text) are printed
escaped by `orbit dev`'s "ended" line, by `orbit history` (timeline and --raw) and by
`orbit start --wait`'s line, as `orbit describe` already did."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from orbit.cli import main as orbit_cli
from orbit.local import LocalStack
from orbit.local.devserver import DevServer
from orbit.local.text import cut, printable

from tests.e2e.http_servers import dev_serving

pytestmark = pytest.mark.e2e
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\u202eevil\x9b"
WAITS = {"orbit": 1, "name": "waits", "version": "1", "steps": {"a": {"wait_for": "go"}}}


def clean(text: str) -> None:
    for ch in ("\x1b", "\x07", "\u202e", "\x9b"):
        assert ch not in text, repr(text)


def test_printable_escapes_every_control_character_but_a_newline() -> None:
    assert printable(HOSTILE) == "\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mred\\u202eevil\\x9b"
    assert printable("plain ünïcode → ok") == "plain ünïcode → ok"
    assert cut("a\nb\x1b", None) == "a b\\x1b"


@pytest.fixture(scope="module")
def dev() -> Iterator[DevServer]:
    with LocalStack(mode="inprocess") as stack:
        stack.register(WAITS)
        server = DevServer(stack, port=0)
        server.out = io.StringIO()
        with dev_serving(server):
            yield server


def test_dev_ended_line_and_orbit_history_escape_caller_text(dev: DevServer,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    url = ["--url", dev.url]
    assert orbit_cli.main(["start", "waits", "--id", "e1", "--input", "{}", *url]) == 0
    assert orbit_cli.main(["cancel", "e1", "--reason", HOSTILE, *url]) == 0
    assert orbit_cli.main(["start", "waits", "--id", "e1", "--input", "{}", "--wait", "--timeout", "20",
                           *url]) == 1  # it ended CANCELLED: the one line says so, escaped
    for args in (["history", "e1"], ["history", "e1", "--raw"], ["describe", "e1"]):
        assert orbit_cli.main([*args, *url]) == 0
    out, err = capsys.readouterr()
    clean(out)
    clean(err)
    assert "pwned" in out and "\\x1b]0;pwned" in out
    printed = dev.out.getvalue()  # type: ignore[attr-defined]
    assert "ended   waits e1: CANCELLED" in printed and "\\x1b]0;pwned" in printed
    assert "\\x1b]0;pwned" in err  # orbit start --wait
    clean(printed)
