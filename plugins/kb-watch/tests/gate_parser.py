"""A test plugin (``KB_PLUGIN_MODULES=gate_parser``) whose parser of ``.gate`` files holds an update open
until the watcher has received SIGINT, so that a test signals *during* an update as an event, not a guess.

Parsing a ``.gate`` file creates ``started`` in the folder the ``WATCH_GATE`` variable names, then
waits (in kb's main thread, where the ingest parses) until a SIGINT has reached the process and kb's
own handler has run; then the parse, and the update around it, go on.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from types import FrameType

from kb_core.plugin import Block, ParsedDocument, RegisterParser, hookimpl

GATE_ENV = "WATCH_GATE"
#: The longest a gate waits for its SIGINT (a test that never sends one fails rather than hangs).
MOST_S = 600.0


class GateParser:
    """Parses a ``.gate`` file as one block of its text, after the process has received a SIGINT."""

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument:
        """Tell the test the update has started, wait for SIGINT (handled by kb first), then parse."""
        arrived = threading.Event()
        previous = signal.getsignal(signal.SIGINT)

        def chained(signum: int, frame: FrameType | None) -> None:
            arrived.set()
            if callable(previous):
                previous(signum, frame)

        signal.signal(signal.SIGINT, chained)
        try:
            (Path(os.environ[GATE_ENV]) / "started").touch()
            deadline = time.monotonic() + MOST_S
            while not arrived.is_set():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the gate waited {MOST_S:.0f} s for a SIGINT")
                time.sleep(0.01)  # a signal interrupts the sleep; its handler runs here, in the main thread
        finally:
            if signal.getsignal(signal.SIGINT) is chained:  # kb's handler may have put another in its place
                signal.signal(signal.SIGINT, previous)
        text = data.decode("utf-8")
        return ParsedDocument(path, (Block(text, 1, text.count("\n") + 1, verbatim=True),))

    def parse(self, text: str, path: str) -> ParsedDocument:
        """The same, from text."""
        return self.parse_bytes(text.encode("utf-8"), path)


@hookimpl
def register_parsers(register: RegisterParser) -> None:
    """Register the ``gate`` parser for ``.gate`` files."""
    register("gate", lambda _ctx: GateParser(), extensions=(".gate",))
