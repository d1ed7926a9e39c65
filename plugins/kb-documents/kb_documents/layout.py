"""Reading order for one PDF page: glyphs with positions in, lines of text out.

Pure geometry, no PDF library: :mod:`kb_documents.pdf` feeds it the glyphs pdfium reports.

1. Glyphs become *runs*: text on one baseline with no gap wider than one em (a column gutter
   or a table cell gap ends a run). Runs on one baseline that nearly touch are merged, so a
   writer that places every word on its own does not matter.
2. Runs are grouped into *bands* (runs whose vertical extents overlap: one visual line).
3. Consecutive bands that share a vertical gutter (an x-range no run crosses) form a section.
   A section whose sides both hold prose (runs of 15+ characters typically) is multi-column: its
   left side is read before its right side (recursively, so three columns work too). Otherwise
   its bands are rows, read left to right; a band of several runs is a table row, its cells
   joined by `` | ``.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median
from typing import NamedTuple

import attrs

MIN_PROSE_CHARS = 15  # a column of prose has runs at least this long (median); table cells are shorter
MAX_SECTION_GAP = 2.5  # a vertical gap of this many ems between lines ends a multi-column section
MAX_DEPTH = 8  # column recursion depth (nested columns); deeper input is read row by row


class Glyph(NamedTuple):
    """One character as the PDF places it: left/right edges, baseline and font size (points)."""

    char: str
    x0: float
    x1: float
    baseline: float
    size: float


@attrs.define
class Run:
    """Text on one baseline without a wide gap."""

    text: str
    x0: float
    x1: float
    baseline: float
    size: float
    sources: tuple[int, ...] = ()  # what the run was made of, for callers that track it (OCR lines)

    @property
    def top(self) -> float:
        return self.baseline + 0.8 * self.size

    @property
    def bottom(self) -> float:
        return self.baseline - 0.25 * self.size


class Cell(NamedTuple):
    """A cell of a line (a run, or an empty cell put back): its text and left and right edges."""

    text: str
    x0: float
    x1: float


@attrs.frozen
class Line:
    """A line of the page in reading order. ``cells`` > 1 marks a table row."""

    text: str
    size: float
    top: float
    bottom: float
    x0: float
    cells: int = 1
    sources: tuple[int, ...] = ()  # the sources of its runs
    spans: tuple[Cell, ...] = ()  # its cells, left to right


def make_runs(glyphs: Sequence[Glyph]) -> list[Run]:
    """Group glyphs (in content-stream order) into runs, then merge touching runs on a baseline."""
    runs: list[Run] = []
    current: Run | None = None
    for glyph in glyphs:
        if glyph.char in "\r\n\x00" or glyph.size <= 0:
            continue
        if current is not None and _continues(current, glyph):
            gap = glyph.x0 - current.x1
            if gap > 0.15 * glyph.size and not current.text.endswith(" ") and glyph.char != " ":
                current.text += " "
            current.text += glyph.char
            current.x1 = max(current.x1, glyph.x1)
            current.size = max(current.size, glyph.size)
            continue
        if current is not None and current.text.strip():
            runs.append(current)
        current = Run(glyph.char, glyph.x0, glyph.x1, glyph.baseline, glyph.size)
    if current is not None and current.text.strip():
        runs.append(current)
    return merge_touching(runs)


def _continues(run: Run, glyph: Glyph) -> bool:
    size = max(run.size, glyph.size)
    same_line = abs(glyph.baseline - run.baseline) <= 0.3 * size
    gap = glyph.x0 - run.x1
    return same_line and -1.0 * size <= gap <= 1.0 * size  # ligatures repeat the box of their first letter


def merge_touching(runs: list[Run]) -> list[Run]:
    """Runs on one baseline that nearly touch (a gap under one em) joined into one, top to bottom."""
    ordered = sorted(runs, key=lambda r: (-round(r.baseline, 1), r.x0))
    merged: list[Run] = []
    for run in ordered:
        last = merged[-1] if merged else None
        if (
            last is not None
            and abs(last.baseline - run.baseline) <= 0.3 * max(last.size, run.size)
            and -1.0 * run.size <= run.x0 - last.x1 <= 1.0 * max(last.size, run.size)
        ):
            joiner = "" if last.text.endswith(" ") or run.text.startswith(" ") else " "
            last.text += joiner + run.text
            last.x1 = max(last.x1, run.x1)
            last.size = max(last.size, run.size)
            last.sources += run.sources
        else:
            merged.append(Run(run.text, run.x0, run.x1, run.baseline, run.size, run.sources))
    return merged


def _bands(runs: Sequence[Run]) -> list[list[Run]]:
    """Runs grouped into visual lines, top to bottom (vertical overlap of half the smaller height)."""
    bands: list[list[Run]] = []
    high = low = 0.0  # the extent of the last band, kept as it grows (linear time on any page)
    for run in sorted(runs, key=lambda r: -r.top):
        if bands:
            overlap = min(high, run.top) - max(low, run.bottom)
            if overlap >= 0.5 * min(run.top - run.bottom, high - low):
                bands[-1].append(run)
                low = min(low, run.bottom)
                continue
        bands.append([run])
        high, low = run.top, run.bottom
    return [sorted(band, key=lambda r: r.x0) for band in bands]


def _gutters(band: Sequence[Run], left: float, right: float, min_width: float) -> list[tuple[float, float]]:
    """The x-ranges inside [left, right] that no run of ``band`` covers, at least ``min_width`` wide."""
    gaps: list[tuple[float, float]] = []
    edge = left
    for run in sorted(band, key=lambda r: r.x0):
        if run.x0 - edge >= min_width:
            gaps.append((edge, run.x0))
        edge = max(edge, run.x1)
    if right - edge >= min_width:
        gaps.append((edge, right))
    return gaps


def _intersect(
    a: list[tuple[float, float]], b: list[tuple[float, float]], min_width: float
) -> list[tuple[float, float]]:
    out = []
    for a0, a1 in a:
        for b0, b1 in b:
            lo, hi = max(a0, b0), min(a1, b1)
            if hi - lo >= min_width:
                out.append((lo, hi))
    return out


def order_lines(runs: Sequence[Run], depth: int = 0) -> list[Line]:
    """The runs of a page (or a column) as lines in reading order."""
    if not runs:
        return []
    left = min(r.x0 for r in runs)
    right = max(r.x1 for r in runs)
    body = median(r.size for r in runs)
    min_gutter = 1.0 * body
    lines: list[Line] = []
    bands = _bands(runs)
    index = 0
    while index < len(bands):
        section, gutter = _section(bands, index, left, right, min_gutter)
        index += len(section)
        section_runs = [r for band in section for r in band]
        if gutter is not None and depth < MAX_DEPTH and _is_prose_columns(section_runs, gutter):
            split = (gutter[0] + gutter[1]) / 2
            lines.extend(order_lines([r for r in section_runs if r.x1 <= split], depth + 1))
            lines.extend(order_lines([r for r in section_runs if r.x0 >= split], depth + 1))
        else:
            lines.extend(_row(band) for band in section)
    return lines


def _section(
    bands: list[list[Run]], start: int, left: float, right: float, min_gutter: float
) -> tuple[list[list[Run]], tuple[float, float] | None]:
    """The longest run of bands from ``start`` sharing an inner gutter (with runs on both sides)."""
    common = [g for g in _gutters(bands[start], left, right, min_gutter) if left < g[0] and g[1] < right]
    if not common:
        return [bands[start]], None
    end = start + 1
    while end < len(bands):
        if min(r.bottom for r in bands[end - 1]) - max(r.top for r in bands[end]) > MAX_SECTION_GAP * min_gutter:
            break  # a wide vertical gap ends the columns
        narrowed = _intersect(common, _gutters(bands[end], left, right, min_gutter), min_gutter)
        if not narrowed:
            break
        common = narrowed
        end += 1
    section = bands[start:end]
    widest = max(common, key=lambda g: g[1] - g[0])
    return section, widest


def _is_prose_columns(runs: Sequence[Run], gutter: tuple[float, float]) -> bool:
    """Both sides of the gutter hold prose: several lines with a long median run."""
    split = (gutter[0] + gutter[1]) / 2
    sides = [[r for r in runs if r.x1 <= split], [r for r in runs if r.x0 >= split]]
    if any(len(side) < 2 for side in sides):
        return False
    return all(median(len(r.text.strip()) for r in side) >= MIN_PROSE_CHARS for side in sides)


def _row(band: Sequence[Run]) -> Line:
    cells = [Cell(" ".join(r.text.split()), r.x0, r.x1) for r in band if r.text.strip()]
    return Line(
        text=" | ".join(cell.text for cell in cells),
        size=max(r.size for r in band),
        top=max(r.top for r in band),
        bottom=min(r.bottom for r in band),
        x0=min(r.x0 for r in band),
        cells=len(cells),
        sources=tuple(s for r in band for s in r.sources),
        spans=tuple(cells),
    )
