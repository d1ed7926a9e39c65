"""An mbox file, message by message, in one streaming pass and bounded memory.

The standard library's :class:`mailbox.mbox` reads messages lazily too, but first indexes the whole file
with an unbounded ``readline`` (a file with no line breaks is read into memory whole) and opens it for
writing. This reader splits the same format, as mutt and Thunderbird write it: a line starting
``From `` at the start of the file or after a blank line starts a message; ``>From `` lines (mboxrd)
lose one ``>``. Lines are read at most :data:`LINE_BYTES` at a time, and a message over its cap is
skipped (its head is kept, to name it) rather than held.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import attrs

from kb_core import KbError

#: The most bytes of a line read at once; a longer line comes in pieces (only a piece at a line's start is
#: looked at as a ``From `` line).
LINE_BYTES = 1 << 20
#: Bytes of a skipped message kept to name it (its headers).
HEAD_BYTES = 64 * 1024
_ESCAPED_FROM = re.compile(rb"^>+From ")


@attrs.frozen
class RawMessage:
    """One message of an mbox: its bytes (without the ``From `` line), or why it was skipped (``problem``;
    ``head`` then holds its first bytes), and the offset in the file where it ends."""

    data: bytes = attrs.field(repr=lambda data: f"<{len(data)} bytes>")
    end: int
    problem: str = ""
    head: bytes = b""


@attrs.define
class _Collecting:
    pieces: list[bytes] = attrs.field(factory=list)
    size: int = 0
    over: bool = False
    head: bytearray = attrs.field(factory=bytearray)

    def add(self, piece: bytes, cap: int) -> None:
        if len(self.head) < HEAD_BYTES:
            self.head += piece[: HEAD_BYTES - len(self.head)]
        self.size += len(piece)
        if self.size > cap:
            self.over = True
            self.pieces = []
        elif not self.over:
            self.pieces.append(piece)

    def done(self, end: int, cap: int, cut_short: bool) -> RawMessage:
        if self.over:
            problem = f"the message is over {cap:,} bytes (kb_core.bounds.MESSAGE_BYTES); skipped"
            return RawMessage(b"", end, problem, bytes(self.head))
        data = b"".join(self.pieces)
        if data.endswith(b"\n\n"):  # the blank line before the next "From " line is the separator's
            data = data[:-1]
        if cut_short:
            problem = "the mailbox ends inside this message (the file is cut short); skipped"
            return RawMessage(b"", end, problem, data[:HEAD_BYTES])
        return RawMessage(data, end)


def read_mbox(file: Path, cap: int) -> Iterator[RawMessage]:
    """The messages of the mbox at ``file``, each at most ``cap`` bytes; a :class:`KbError` when it is no mbox."""
    try:
        handle = file.open("rb")
    except OSError as exc:
        raise KbError(f"cannot read the mailbox: {exc.strerror or exc}") from None
    with handle:
        yield from _split(handle, cap)


def _split(handle: BinaryIO, cap: int) -> Iterator[RawMessage]:
    read = handle.readline
    offset = 0
    current: _Collecting | None = None
    line_start = True  # the next piece starts a line
    blank_before = True  # the line before it was blank (or there was none)
    while piece := read(LINE_BYTES):
        starts = line_start
        line_start = piece.endswith(b"\n")
        at = offset
        offset += len(piece)
        if starts and blank_before and piece.startswith(b"From "):
            if current is not None:
                yield current.done(at, cap, cut_short=False)
            current = _Collecting()
            blank_before = False
            if not line_start:  # a "From " line longer than a piece: skip the rest of it
                while (rest := read(LINE_BYTES)) and not rest.endswith(b"\n"):
                    offset += len(rest)
                offset += len(rest)
                line_start = True
            continue
        if starts:
            blank_before = piece in (b"\n", b"\r\n")
        if current is None:
            if starts and blank_before:
                continue  # blank lines before the first message
            raise KbError("not an mbox file: it does not start with a 'From ' line")
        if starts and _ESCAPED_FROM.match(piece):
            piece = piece[1:]
        current.add(piece.replace(b"\r\n", b"\n") if line_start else piece, cap)
    if current is not None:
        yield current.done(offset, cap, cut_short=not line_start)
