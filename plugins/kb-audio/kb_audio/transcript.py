"""Transcripts as lines: a line per sentence, written ``[HH:MM:SS] text``, so a cited line names its moment.

A citation ``talk.mp3#L12-L15`` names lines 12 to 15 of the transcript: the moment it cites runs from
the stamp of line 12 to the stamp of line 16 (or the end of the recording). :func:`moments` does that
mapping; :func:`stamp` and :func:`read_stamp` write and read a line's stamp.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import attrs

SENTENCE_END = (".", "?", "!", "…")
MAX_WORDS = 40  #: a line without a sentence end is closed after this many words
STAMP = re.compile(r"\[(\d{2,}):([0-5]\d):([0-5]\d)\] ")


@attrs.frozen
class Word:
    """A word as the model heard it: its text (with its leading space) and when, in seconds."""

    text: str
    start: float
    end: float


@attrs.frozen
class Line:
    """A transcript line: a sentence (or part of a long one) and when it is said, in seconds."""

    text: str
    start: float
    end: float

    def written(self) -> str:
        """``[HH:MM:SS] text``."""
        return f"[{stamp(self.start)}] {self.text}"


def stamp(seconds: float) -> str:
    """``HH:MM:SS`` (whole seconds, rounded down; hours grow past 99)."""
    whole = max(0, int(seconds))
    return f"{whole // 3600:02d}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def read_stamp(line: str) -> int | None:
    """The seconds a written line starts at, or None when it does not start with a stamp."""
    match = STAMP.match(line)
    if match is None:
        return None
    hours, minutes, seconds = (int(group) for group in match.groups())
    return hours * 3600 + minutes * 60 + seconds


def lines(words: Iterable[Word]) -> list[Line]:
    """Words into lines: a line ends after a sentence's last word, or after :data:`MAX_WORDS` words."""
    out: list[Line] = []
    held: list[Word] = []
    for word in words:
        if not word.text.strip():
            continue
        held.append(word)
        if word.text.rstrip().endswith(SENTENCE_END) or len(held) >= MAX_WORDS:
            out.append(_line(held))
            held = []
    if held:
        out.append(_line(held))
    return out


def _line(words: Sequence[Word]) -> Line:
    text = " ".join("".join(w.text for w in words).split())
    return Line(text, words[0].start, max(w.end for w in words))


def moments(written: Sequence[str], first: int, last: int, duration: float | None = None) -> tuple[int, int | None]:
    """The moment lines FIRST..LAST (1-based) of a written transcript cite: from the stamp of line FIRST to
    the stamp of the line after LAST, or DURATION (None: unknown) when LAST is the final line."""
    start = read_stamp(written[first - 1])
    if start is None:
        raise ValueError(f"line {first} holds no stamp")
    after = read_stamp(written[last]) if last < len(written) else None
    end = after if after is not None else (None if duration is None else int(duration + 0.999))
    return start, end
