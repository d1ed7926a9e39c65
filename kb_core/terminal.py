"""Terminal safety: file names and document text never reach a terminal as control sequences.

Two layers. :func:`shown` escapes a single untrusted value (a path, a title, a reason) so that it
stays on one line: every control character, newlines included, becomes a visible escape
(``\\n``, ``\\x1b``, ``\\u202e``). :class:`SafeStream` wraps ``sys.stdout`` and ``sys.stderr``
for the whole run of the CLI and escapes whatever still carries control characters (answers
streamed from a model, snippets): only newline, tab and the plain colour/bold sequences kb
itself writes (``ESC [ n m``) pass. JSON output carries no raw control characters (see
:func:`kb_core.output.dumps`), so it passes unchanged.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

#: Characters a terminal may act on: C0 controls, DEL, C1 controls, line/paragraph separators,
#: and the bidirectional overrides and isolates that reorder what is shown ("Trojan Source").
UNSAFE_OUTSIDE_C0 = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u061c\u200e\u200f"
_UNSAFE = re.compile(f"[\x00-\x1f{UNSAFE_OUTSIDE_C0}]")
#: In a stream: the same, but newline and tab pass; an ESC passes only as a plain SGR sequence.
_STREAM = re.compile(f"\x1b\\[(?:[0-9]{{1,2}}(?:;[0-9]{{1,2}})*)?m|[\x00-\x08\x0b-\x1f{UNSAFE_OUTSIDE_C0}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: SGR parameters kb's own styles use (bold, dim, normal, colours, reset); others are escaped.
_SGR_OK = re.compile(r"\x1b\[(?:(?:0|1|2|22|3[0-79]|9[0-7])(?:;(?:0|1|2|22|3[0-79]|9[0-7]))*)?m")


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: object) -> str:
    """``text`` with every control character escaped visibly, so it prints as one inert line."""
    return _UNSAFE.sub(lambda m: _escape(m.group()), str(text))


def escape_stream_text(text: str) -> str:
    """``text`` made safe for a terminal, keeping newlines, tabs and kb's own colour sequences."""

    def replace(match: re.Match[str]) -> str:
        found = match.group()
        if found.startswith("\x1b[") and _SGR_OK.fullmatch(found):
            return found
        return "".join(_escape(c) for c in found[:1]) + found[1:]

    return _STREAM.sub(replace, text)


class SafeStream:
    """A text stream that escapes control sequences before they reach the wrapped stream."""

    def __init__(self, stream: TextIO) -> None:
        self.raw = stream

    def write(self, text: str) -> int:
        """Write ``text`` with control sequences escaped (returns the length given)."""
        self.raw.write(escape_stream_text(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        """Write each line."""
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def raw_stream(stream: Any) -> Any:
    """The stream under a :class:`SafeStream` (for kb's own progress bars), else ``stream``."""
    return stream.raw if isinstance(stream, SafeStream) else stream


def shortened(text: str, limit: int = 200) -> str:
    """``text`` escaped and cut to ``limit`` characters, saying how much was left out (for echoing a query)."""
    escaped = shown(text)
    if len(escaped) <= limit:
        return escaped
    return f"{escaped[:limit]}… ({len(escaped) - limit} more characters)"
