"""A stored document's text, line by line, put back from its chunks (what ``kb serve`` and ``kb mcp``
show of a document; never the file on disk, so a citation shows what was indexed).

The store keeps every chunk's text with the source lines it covers (``start_line``..``end_line``):

* a chunk whose text has as many lines as its range (Markdown, plain text) gives those lines
  exactly; so does one whose only extra lines are the blank lines the chunker put between blocks
  (the parsed text of a PDF, which has no blank lines), or whose first line is a table's header
  row repeated where it continues the table (:func:`~kb_core.storage.freshness.span_lines`), or
  both: a header row repeated after such a blank line, before the rows of a table continued from
  a previous page;
* a chunk whose text does not line up with its range otherwise (HTML: the text was extracted from
  the markup; Markdown blocks joined by one blank line where the file had two) is fitted into its
  range, blank lines first dropped, extra lines joined onto the last one, so a citation of that
  range still shows that text; the result is then not exact;
* a line no chunk covers (front matter, markup, blank lines between sections) is None.

>>> from kb_core.types import Chunk
>>> first = Chunk("a", "r.pdf", 0, "Year | Sales\\n2023 | 7", "h", 1, 2)
>>> second = Chunk("b", "r.pdf", 1, "Year | Sales\\n2024 | 9", "h", 3, 3)  # the header repeated
>>> stored_lines([first, second])
(['Year | Sales', '2023 | 7', '2024 | 9'], True)
"""

from __future__ import annotations

from collections.abc import Sequence

from kb_core.storage.freshness import span_lines
from kb_core.types import Chunk

#: The most lines a document's text may have (a parser's line numbers are not trusted to be small).
MAX_LINES = 1_000_000


def stored_lines(chunks: Sequence[Chunk]) -> tuple[list[str | None], bool]:
    """The document's lines (None: no chunk covers it) and whether every chunk matched its range exactly."""
    usable = [c for c in chunks if 1 <= c.start_line <= c.end_line]
    count = min(max((c.end_line for c in usable), default=0), MAX_LINES)
    lines: list[str | None] = [None] * count
    placed: set[str | None] = set()
    exact = True
    for chunk in sorted(usable, key=lambda c: c.ordinal):
        if chunk.start_line > count:
            continue
        height = min(chunk.end_line, count) - chunk.start_line + 1  # (a span past MAX_LINES is not padded out)
        text = span_lines([line.removesuffix("\r") for line in chunk.text.split("\n")], height, placed)
        if len(text) != height:
            text, fitted_exactly = _fit(text, height, placed)
            exact = exact and fitted_exactly
        for offset, line in enumerate(text):
            index = chunk.start_line - 1 + offset
            if index >= count:
                break
            if lines[index] is None:  # an overlapping chunk repeats the lines before it
                lines[index] = line
                placed.add(line)
    return lines, exact


def _fit(lines: list[str], height: int, known: set[str | None]) -> tuple[list[str], bool]:
    """``lines`` made exactly ``height`` long, and whether that is exact.

    Blank lines go first, then extra lines are joined onto the last; a short text is padded. When
    the blank lines are exactly the extra ones (blocks the chunker joined with a blank line that the
    source did not have, as in a PDF's parsed text), dropping them gives the source lines exactly;
    so does dropping them and a table row repeated after one of them (a ``known`` line: the header
    row the chunker put before the rows of a table continued from an earlier block).
    """
    extra = len(lines) - height
    if extra > 0:
        kept = [line for line in lines if line.strip()]
        if len(kept) == height:
            return kept, True
        repeated = _repeated_header(lines, known)
        if len(kept) == height + 1 and repeated is not None:
            return [line for index, line in enumerate(lines) if line.strip() and index != repeated], True
        lines = kept or [""]
    if len(lines) > height:
        lines = [*lines[: height - 1], " ".join(lines[height - 1 :])]
    return lines + [""] * (height - len(lines)), False


def _repeated_header(lines: list[str], known: set[str | None]) -> int | None:
    """The index of the first line that follows a blank line, is a known table row and has a row after it."""
    for index in range(1, len(lines) - 1):
        line = lines[index]
        if not lines[index - 1].strip() and "|" in line and line in known and lines[index + 1].strip():
            return index
    return None
