"""When a recording says the lines a citation names, from what its parser stored in ``metadata["moments"]``.

A parser that transcribes recordings (kb-audio) stores when each line of the transcript starts, in
seconds into the recording, whether the file is sound or a film, and how long it is::

    metadata["moments"] = {"media": "audio", "duration": 18.4, "lines": [[1, 1.0], [2, 6.41], [3, 12.08]]}

A citation's lines stay its canonical form (``talk.mp3#L2-L3``: answers stay re-checkable); its
moment runs from the start of its first line to the start of the line after its last (the end of the
recording after the last line), in whole seconds, and is written as a W3C Media Fragment
(``talk.mp3#t=00:00:06,00:00:13``). :func:`parse_moment` reads that form back (``npt`` times:
``00:00:06``, ``0:06``, ``6.5``, with or without ``npt:``; ``t=,13`` from the start) and
:func:`lines_at` finds the lines that span it.

>>> metadata = {"moments": {"media": "audio", "duration": 18.4, "lines": [[1, 1.0], [2, 6.41], [3, 12.08]]}}
>>> moment_of(metadata, 2, 3).fragment()
't=00:00:06,00:00:19'
>>> lines_at(metadata, 7, 12.5)
(2, 3)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import attrs

from kb_core import bounds
from kb_core.types import CitationError, Moment

#: ``t=`` and its times, as a fragment (after ``#``): ``[npt:]start[,end]`` or ``[npt:],end``.
_TIME = r"[0-9]+(?::[0-9]+){0,2}(?:\.[0-9]*)?"
_FRAGMENT = re.compile(rf"t=(?:npt:)?({_TIME})?(?:,({_TIME}))?")
#: Digits read of one part of a time: more is past the bound already (and int() of 4,301 digits raises).
_MAX_DIGITS = 12
_HINT = "give a moment as kb prints it, like talk.mp3#t=00:12:03,00:12:41 (or a citation's lines, talk.mp3#L8-L15)"


@attrs.frozen
class MomentCitation:
    """A citation of a recording by its moment: the path, and from ``start`` to ``end`` seconds (None: the end)."""

    path: str
    start: float
    end: float | None


def is_moment(text: str) -> bool:
    """Whether ``text`` is shaped as a citation by moment (``path#t=…``), well formed or not."""
    path, sep, fragment = text.rpartition("#")
    return bool(path and sep) and fragment.startswith("t=")


def parse_moment(text: str) -> MomentCitation:
    """``path#t=start,end`` as a :class:`MomentCitation`; a one-line :class:`CitationError` when it is not one,
    a time is malformed or outside :data:`kb_core.bounds.MOMENT_S`, or the moment ends before it starts."""
    path, _sep, fragment = text.rpartition("#")
    found = _FRAGMENT.fullmatch(fragment) if path else None
    if found is None or found.group(1) is None and found.group(2) is None:
        raise CitationError(f"not a citation of a moment: {bounds.shown(text)}", hint=_HINT)
    start = _seconds(found.group(1), text) if found.group(1) is not None else 0.0
    end = _seconds(found.group(2), text) if found.group(2) is not None else None
    if end is not None and end <= start:
        raise CitationError(f"the moment in {bounds.shown(text)} ends before it starts", hint=_HINT)
    return MomentCitation(path, start, end)


def _seconds(written: str, text: str) -> float:
    """An npt time (``H:MM:SS[.f]``, ``MM:SS[.f]`` or ``S[.f]``) in seconds, in :data:`~kb_core.bounds.MOMENT_S`."""
    whole, _dot, fraction = written.partition(".")
    parts = whole.split(":")
    if any(len(part.lstrip("0")) > _MAX_DIGITS for part in parts) or len(fraction) > _MAX_DIGITS:
        raise CitationError(f"the time {bounds.shown(written)} in {bounds.shown(text)} is too long", hint=_HINT)
    numbers = [int(part) for part in parts]
    if len(parts) > 1 and (any(len(part) != 2 for part in parts[1:]) or any(n > 59 for n in numbers[1:])):
        raise CitationError(
            f"the time {bounds.shown(written)} in {bounds.shown(text)} is not hours:minutes:seconds", hint=_HINT
        )
    seconds = 0.0
    for number in numbers:
        seconds = seconds * 60 + number
    seconds += float(f"0.{fraction}") if fraction else 0.0
    if not bounds.MOMENT_S.holds(seconds):
        raise CitationError(f"{written} in {bounds.shown(text)} is not {bounds.MOMENT_S.allowed}", hint=_HINT)
    return seconds


def line_starts(metadata: Mapping[str, Any]) -> dict[int, float]:
    """When each transcript line starts, in seconds, by line number (empty when none; malformed entries left out)."""
    moments = metadata.get("moments")
    rows = moments.get("lines") if isinstance(moments, Mapping) else None
    found: dict[int, float] = {}
    for row in rows if isinstance(rows, list) else []:
        if not (isinstance(row, list) and len(row) == 2):
            continue
        line, start = row
        if type(line) is int and line >= 1 and bounds.MOMENT_S.holds(start):
            found[line] = float(start)
    return found


def media_of(metadata: Mapping[str, Any]) -> str:
    """``video`` when the parser said the recording is a film, else ``audio``."""
    moments = metadata.get("moments")
    return "video" if isinstance(moments, Mapping) and moments.get("media") == "video" else "audio"


def duration_of(metadata: Mapping[str, Any]) -> float | None:
    """How long the recording is, in seconds (None: not stored)."""
    moments = metadata.get("moments")
    duration = moments.get("duration") if isinstance(moments, Mapping) else None
    return float(duration) if isinstance(duration, int | float) and bounds.MOMENT_S.holds(duration) else None


def moment_of(metadata: Mapping[str, Any], start_line: int, end_line: int) -> Moment | None:
    """The moment lines ``start_line..end_line`` are said (None: the document stores no moment for them)."""
    return _moment(line_starts(metadata), start_line, end_line, duration_of(metadata), media_of(metadata))


def _moment(
    starts: Mapping[int, float], start_line: int, end_line: int, duration: float | None, media: str
) -> Moment | None:
    # (from the lines that exist: a span of a billion lines is no more work than the transcript's lines)
    inside = sorted(n for n in starts if start_line <= n <= end_line)
    if not inside:
        return None
    after = min((n for n in starts if n > end_line), default=None)
    end = starts[after] if after is not None else duration
    start = math.floor(starts[inside[0]])
    stop = None if end is None else max(start + 1, math.ceil(end))
    return Moment(start, stop, "video" if media == "video" else "audio")


def lines_at(metadata: Mapping[str, Any], start: float, end: float | None) -> tuple[int, int] | None:
    """The first and last transcript lines said between ``start`` and ``end`` seconds (None: to the end), or
    None when the document stores no moments or the moment begins after the recording ends."""
    starts = line_starts(metadata)
    if not starts:
        return None
    duration = duration_of(metadata)
    if duration is not None and start >= max(duration, max(starts.values()) + 1):
        return None
    ordered = sorted((n, math.floor(s)) for n, s in starts.items())  # (as their stamps say them: whole seconds)
    first = max((n for n, s in ordered if s <= start), default=ordered[0][0])
    last = max((n for n, s in ordered if end is None or s < end), default=first)
    return first, max(first, last)
