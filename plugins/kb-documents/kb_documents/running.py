"""Running headers and footers: the small, set-apart line at the top or foot of most pages.

A line is dropped when it is the top-most or bottom-most line of its page, no larger than the
body text, set apart from the rest by at least one line height, and the same text (digits
ignored: ``Page 3 of 9``) holds that place on at least 60 % of the pages (and three of them).
"""

from __future__ import annotations

import math
import re
from collections import Counter

from kb_documents.layout import Line

MIN_PAGES = 3
SHARE = 0.6
_DIGITS = re.compile(r"\d+")


def _key(line: Line) -> str:
    return " ".join(_DIGITS.sub("#", line.text.casefold()).split())


def _isolated(line: Line, others: list[Line]) -> bool:
    height = max(line.top - line.bottom, 1.0)
    for other in others:
        if other is line:
            continue
        distance = max(other.bottom - line.top, line.bottom - other.top, 0.0)
        if distance < 1.0 * height:
            return False
    return True


def _edges(lines: list[Line], body: float) -> list[tuple[str, Line]]:
    if len(lines) < 2:
        return []
    found = []
    for place, line in (("top", max(lines, key=lambda ln: ln.top)), ("foot", min(lines, key=lambda ln: ln.bottom))):
        if line.size <= body + 0.5 and _isolated(line, lines):
            found.append((place, line))
    return found


def drop_running_lines(pages: list[list[Line]], body: float) -> tuple[list[list[Line]], int]:
    """The pages without their running headers and footers, and how many lines were dropped."""
    if len(pages) < MIN_PAGES:
        return pages, 0
    edges = [_edges(lines, body) for lines in pages]
    counts = Counter((place, _key(line)) for page in edges for place, line in page)
    needed = max(MIN_PAGES, math.ceil(SHARE * len(pages)))
    running = {key for key, count in counts.items() if count >= needed}
    if not running:
        return pages, 0
    kept: list[list[Line]] = []
    dropped = 0
    for lines, page_edges in zip(pages, edges):
        gone = {id(line) for place, line in page_edges if (place, _key(line)) in running}
        dropped += len(gone)
        kept.append([line for line in lines if id(line) not in gone])
    return kept, dropped
