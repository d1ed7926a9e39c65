"""Whether a stored citation still stands, re-checked without a model when its document changes.

A stored answer keeps, per citation, the cited text as it stood (``CitedText``). When the document
changes, :func:`recheck` compares it with the document's lines now:

- the same text at the same lines: ``valid``;
- gone from its lines but standing exactly once elsewhere (lines inserted or removed above it, a
  section moved): ``reanchored`` to the lines where it now stands;
- changed, gone, or gone from its lines and standing more than once (no single anchor is sure):
  ``stale``, with the reason and the wording now at the old lines. When in doubt, stale.

Texts are compared after the normalisation the chunker's input gets (NFC, ``\\n`` line ends, no
trailing blanks), so a re-saved file with other line endings still matches. A chunk that continues
a table starts with the table's header row, which is not one of its lines: :func:`span_lines`
leaves it out.

>>> recheck(CitedText("a.md", 2, 2, "Port 8080."), ["# A", "", "Port 8080."]).state
'reanchored'
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Container, Sequence
from typing import Literal

import attrs

#: What a re-check concluded about one citation.
CitationState = Literal["valid", "reanchored", "stale", "unverifiable"]
#: Why a citation is stale.
StaleReason = Literal["", "removed", "changed", "ambiguous"]


def normalised(text: str) -> str:
    """``text`` as compared: NFC, ``\\n`` line ends, no trailing blanks on a line."""
    lines = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines)


def span_lines(lines: list[str], height: int, known: Container[str | None]) -> list[str]:
    """A chunk's text lines less a repeated table header: the lines that its span of ``height`` lines holds.

    The chunker starts a chunk that continues a table with the table's header row, outside the
    chunk's span; such a text is one line longer than its span, has no blank line (blocks joined
    in one chunk are separated by a blank line), and its first line is a table row (cells joined
    with ``|``) that is one of the document's lines (the header row in its own place), which
    ``known`` holds. Any other text is returned as
    it is.
    """
    if len(lines) == height + 1 and "|" in lines[0] and lines[0] in known and all(line.strip() for line in lines):
        return lines[1:]
    return lines


def fingerprint(text: str) -> str:
    """The SHA-256 of the normalised ``text`` (hex): what a citation rests on."""
    return hashlib.sha256(normalised(text).encode("utf-8")).hexdigest()


@attrs.frozen
class CitedText:
    """What a citation rested on: its document, its lines (1-based, inclusive) and their text."""

    path: str
    start_line: int
    end_line: int
    text: str


@attrs.frozen
class Recheck:
    """The outcome for one citation: its state, where it stands now, and why it is stale."""

    state: CitationState
    start_line: int
    end_line: int
    reason: StaleReason = ""
    now: str | None = None  # the wording at the old lines now, when it changed (None: unknown or gone)


def recheck(cited: CitedText, lines: Sequence[str | None] | None) -> Recheck:
    """Re-check ``cited`` against the document's ``lines`` now (None: the document is gone).

    A line that is None is not known (not in any stored chunk): it never matches, so a window
    holding one is not a place the text stands.
    """
    start, end = cited.start_line, cited.end_line
    if lines is None:
        return Recheck("stale", start, end, "removed")
    span = end - start + 1
    parts = normalised(cited.text).split("\n")
    if len(parts) == span + 1:  # perhaps a table's rows after their repeated header row
        parts = span_lines(parts, span, {normalised(line) for line in lines if line is not None})
    wanted = "\n".join(parts)
    if _text_at(lines, start, span) == wanted:
        return Recheck("valid", start, end)
    first = wanted.split("\n", 1)[0]
    places = [
        i + 1
        for i in range(len(lines) - span + 1)
        if _text_at(lines, i + 1, 1) == first and _text_at(lines, i + 1, span) == wanted
    ]
    if len(places) == 1:
        return Recheck("reanchored", places[0], places[0] + span - 1)
    now = _text_at(lines, start, span)
    return Recheck("stale", start, end, "ambiguous" if places else "changed", now)


def _text_at(lines: Sequence[str | None], start: int, span: int) -> str | None:
    """The normalised text of ``span`` lines from line ``start`` (None when out of range or unknown)."""
    if start < 1 or start - 1 + span > len(lines):
        return None
    window = lines[start - 1 : start - 1 + span]
    if any(line is None for line in window):
        return None
    return normalised("\n".join(line or "" for line in window))
