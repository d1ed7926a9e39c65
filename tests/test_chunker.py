"""The chunker: spans inside the document and in order, never over the hard maximum, deterministic."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core.ingest.chunker import Chunker, ChunkLimits, chunk_id
from kb_core.types import Block

WORDS = st.sampled_from(
    ["alpha", "beta", "gamma", "서울", "인구는", "长城", "茶叶", "x" * 40, "naïve", "😀", "1234", "—"]
)
LINE = st.lists(WORDS, min_size=0, max_size=60).map(" ".join)


@st.composite
def documents(draw: st.DrawFn) -> list[Block]:
    """Blocks as a parser would give them: ordered, non-overlapping spans, nested heading paths."""
    blocks: list[Block] = []
    line = 1
    headings: list[str] = []
    for _ in range(draw(st.integers(0, 12))):
        line += draw(st.integers(0, 3))
        if draw(st.booleans()) and len(headings) < 3:
            title = draw(LINE) or "h"
            depth = draw(st.integers(0, len(headings)))
            headings = headings[:depth] + [title]
            blocks.append(Block("#" * len(headings) + " " + title, line, line, tuple(headings), "heading"))
            line += 1
            continue
        lines = draw(st.lists(LINE, min_size=1, max_size=8))
        kind = draw(st.sampled_from(["paragraph", "paragraph", "table"]))
        blocks.append(Block("\n".join(lines), line, line + len(lines) - 1, tuple(headings), kind, verbatim=True))
        line += len(lines)
    return blocks


LIMITS = st.builds(
    lambda hard, target_frac, overlap_frac: ChunkLimits(
        target=max(1, int(hard * target_frac)), hard_max=hard, overlap=int(hard * target_frac * overlap_frac)
    ),
    st.integers(16, 300),
    st.floats(0.3, 1.0),
    st.floats(0.0, 0.5),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=documents(), limits=LIMITS, with_offsets=st.booleans())
def test_chunks_respect_spans_order_and_hard_max(
    embedder, blocks: list[Block], limits: ChunkLimits, with_offsets: bool
) -> None:
    chunker = Chunker(embedder.count_tokens, limits, embedder.token_starts if with_offsets else None)
    chunks = chunker.chunk("notes/a.md", blocks)
    last_line = max((b.end_line for b in blocks), default=0)
    recounted = embedder.count_tokens([c.text for c in chunks]) if chunks else []
    for position, (chunk, real) in enumerate(zip(chunks, recounted)):
        assert chunk.ordinal == position
        assert 1 <= chunk.start_line <= chunk.end_line <= last_line
        assert real <= limits.hard_max, (real, limits)
        assert chunk.token_count == real
        assert chunk.chunk_id == chunk_id("notes/a.md", position, chunk.content_hash)
    starts = [c.start_line for c in chunks]
    assert starts == sorted(starts)
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    # every non-blank line of content appears in some chunk
    text = "\n".join(c.text for c in chunks)
    for block in blocks:
        for line in block.text.split("\n"):
            if line.strip() and embedder.count_tokens([line])[0] <= limits.hard_max:
                assert line in text


@settings(max_examples=40, deadline=None)
@given(blocks=documents())
def test_chunking_is_deterministic(embedder, blocks: list[Block]) -> None:
    limits = ChunkLimits(target=60, hard_max=80, overlap=10)
    first = Chunker(embedder.count_tokens, limits).chunk("a.md", blocks)
    second = Chunker(embedder.count_tokens, limits).chunk("a.md", blocks)
    assert first == second


def test_a_heading_travels_with_the_next_block_and_sections_split(embedder) -> None:
    blocks = [
        Block("# Guide", 1, 1, ("Guide",), "heading"),
        Block("Intro text.", 3, 3, ("Guide",)),
        Block("## Install", 5, 5, ("Guide", "Install"), "heading"),
        Block("Run the installer.", 6, 6, ("Guide", "Install")),
    ]
    chunks = Chunker(embedder.count_tokens, ChunkLimits(target=200, hard_max=256, overlap=20)).chunk("g.md", blocks)
    assert [c.text for c in chunks] == ["# Guide\n\nIntro text.", "## Install\n\nRun the installer."]
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (5, 6)]
    assert chunks[1].heading_path == ("Guide", "Install")
    assert str(chunks[1].citation) == "g.md#L5-L6"


def test_overlap_carries_trailing_lines_into_the_next_chunk(embedder) -> None:
    lines = [f"sentence number {i} talks about topic {i}." for i in range(40)]
    blocks = [Block(line, i + 1, i + 1, ("S",)) for i, line in enumerate(lines)]
    chunks = Chunker(embedder.count_tokens, ChunkLimits(target=60, hard_max=80, overlap=25)).chunk("o.md", blocks)
    assert len(chunks) > 3
    for before, after in zip(chunks, chunks[1:]):
        assert after.start_line <= before.end_line  # shared lines
        assert after.end_line > before.end_line  # and progress


@pytest.mark.parametrize("with_offsets", [False, True])
def test_oversized_line_is_split_below_the_hard_max(embedder, with_offsets: bool) -> None:
    line = " ".join(f"token{i}" for i in range(2000))
    starts = embedder.token_starts if with_offsets else None
    chunks = Chunker(embedder.count_tokens, ChunkLimits(target=100, hard_max=128, overlap=0), starts).chunk(
        "big.txt", [Block(line, 1, 1)]
    )
    assert len(chunks) > 5
    assert all(c.token_count <= 128 for c in chunks)
    assert all((c.start_line, c.end_line) == (1, 1) for c in chunks)
    assert "".join(c.text for c in chunks) == line


def test_extracted_text_lines_are_not_mapped_onto_source_lines(embedder) -> None:
    """Non-verbatim text (HTML) that happens to have as many lines as its span cites the whole span."""
    text = "\n".join("word " * 60 for _ in range(3))
    limits = ChunkLimits(target=60, hard_max=80, overlap=0)
    chunks = Chunker(embedder.count_tokens, limits).chunk("p.html", [Block(text, 10, 12, verbatim=False)])
    assert len(chunks) > 1 and all((c.start_line, c.end_line) == (10, 12) for c in chunks)
    exact = Chunker(embedder.count_tokens, limits).chunk("p.md", [Block(text, 10, 12, verbatim=True)])
    assert [c.start_line for c in exact][0] == 10 and exact[-1].end_line == 12 and exact[-1].start_line > 10


@pytest.mark.parametrize(("target", "hard", "overlap"), [(0, 100, 0), (200, 100, 0), (50, 100, 50), (5, 4, 0)])
def test_invalid_limits_are_rejected(target: int, hard: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="."):
        ChunkLimits(target=target, hard_max=hard, overlap=overlap)


CELL = st.sampled_from(["12", "3.5", "kg", "Oslo", "서울", "长城", "naïve", "—", "north", "total", "2024-01-02"])
ROW = st.lists(CELL, min_size=1, max_size=6).map(" | ".join)
TABLE_LIMITS = st.builds(
    lambda hard, target_frac, overlap_frac: ChunkLimits(
        target=max(1, int(hard * target_frac)), hard_max=hard, overlap=int(hard * target_frac * overlap_frac)
    ),
    st.integers(24, 160),
    st.floats(0.3, 1.0),
    st.floats(0.0, 0.5),
)


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[Block], Block]:
    """A document with one table (a header and rows, one per line), maybe prose and a heading around it."""
    blocks: list[Block] = []
    line = 1
    path = ("Prices",) if draw(st.booleans()) else ()
    if path:
        blocks.append(Block("# Prices", line, line, path, "heading", verbatim=True))
        line += 2
    for _ in range(draw(st.integers(0, 2))):
        text = draw(st.lists(WORDS, min_size=1, max_size=30).map(" ".join))
        blocks.append(Block(text, line, line, path, verbatim=True))
        line += 2
    rows = [draw(ROW), *draw(st.lists(ROW, min_size=1, max_size=80) | st.lists(ROW, min_size=20, max_size=80))]
    if draw(st.booleans()):  # a table written from another format (CSV, HTML): each row with its own lines
        heights = [draw(st.integers(1, 3)) for _ in rows]
        spans = tuple((line + sum(heights[:i]), line + sum(heights[: i + 1]) - 1) for i in range(len(rows)))
        table = Block("\n".join(rows), line, spans[-1][1], path, "table", verbatim=False, line_spans=spans)
    else:
        table = Block("\n".join(rows), line, line + len(rows) - 1, path, "table", verbatim=True)
    blocks.append(table)
    line = table.end_line + 2
    for _ in range(draw(st.integers(0, 2))):
        blocks.append(
            Block(draw(st.lists(WORDS, min_size=1, max_size=30).map(" ".join)), line, line, path, verbatim=True)
        )
        line += 2
    return blocks, table


def _row_spans(table: Block) -> list[tuple[int, int]]:
    return list(table.line_spans) or [(n, n) for n in range(table.start_line, table.end_line + 1)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=tables(), limits=TABLE_LIMITS, with_offsets=st.booleans())
def test_every_chunk_of_a_table_begins_with_its_header_and_holds_each_row_once(
    embedder, document: tuple[list[Block], Block], limits: ChunkLimits, with_offsets: bool
) -> None:
    blocks, table = document
    rows = table.text.split("\n")
    spans = _row_spans(table)
    header = rows[0]
    assume_fits = embedder.count_tokens([header + "\n" + max(rows[1:], key=len)])[0] <= limits.hard_max // 2
    chunker = Chunker(embedder.count_tokens, limits, embedder.token_starts if with_offsets else None)
    chunks = chunker.chunk("t.md", blocks)
    for first, last in spans:
        holding = [c for c in chunks if c.start_line <= first <= c.end_line]
        assert len(holding) == 1 or not assume_fits, (first, [(c.start_line, c.end_line) for c in chunks])
        assert holding[0].end_line >= last  # a row's lines are never cut apart
    for chunk in chunks:
        if not table.start_line < chunk.start_line <= table.end_line:
            continue  # not a chunk that continues the table
        lines = chunk.text.split("\n")
        own = [row for row, (first, _) in zip(rows, spans) if chunk.start_line <= first <= chunk.end_line]
        if assume_fits:
            assert lines[0] == header
            assert lines[1:] == own  # the header lies outside the span; the rest is the span's rows exactly
            assert chunk.end_line <= table.end_line  # a chunk that continues a table holds nothing else


def test_a_split_table_repeats_its_header_outside_the_span(embedder) -> None:
    rows = ["Item | Price | Stock"] + [f"widget number {i} | {i * 3}.50 EUR | {i * 7}" for i in range(1, 30)]
    blocks = [
        Block("# Prices", 1, 1, ("Prices",), "heading", verbatim=True),
        Block("\n".join(rows), 3, 2 + len(rows), ("Prices",), "table", verbatim=True),
        Block("After the table.", 4 + len(rows), 4 + len(rows), ("Prices",), verbatim=True),
    ]
    chunks = Chunker(embedder.count_tokens, ChunkLimits(target=80, hard_max=100, overlap=20)).chunk("p.md", blocks)
    assert len(chunks) > 3
    assert chunks[0].text.startswith("# Prices\n\nItem | Price | Stock\nwidget number 1 |")
    middle = chunks[1:-1]
    for chunk in middle:
        lines = chunk.text.split("\n")
        assert lines[0] == "Item | Price | Stock"
        assert lines[1:] == rows[chunk.start_line - 3 : chunk.end_line - 2]
        assert len(lines) == chunk.end_line - chunk.start_line + 2
    assert [(a.end_line + 1) for a in chunks[:-2]] == [b.start_line for b in chunks[1:-1]]  # rows in one chunk each
    assert chunks[-1].text == "After the table." and chunks[-2].end_line == 2 + len(rows)


def test_a_header_row_travels_with_the_first_row(embedder) -> None:
    """A header that would end a chunk on its own opens the next one, and is not repeated there."""
    prose = " ".join(f"word{i}" for i in range(50))
    rows = ["Name | Value"] + [f"row {i} | {i}" for i in range(40)]
    blocks = [Block(prose, 1, 1, verbatim=True), Block("\n".join(rows), 3, 2 + len(rows), (), "table", verbatim=True)]
    for target in range(60, 90):
        limits = ChunkLimits(target=target, hard_max=120, overlap=0)
        chunks = Chunker(embedder.count_tokens, limits).chunk("h.md", blocks)
        for chunk in chunks:
            lines = chunk.text.split("\n")
            assert lines[-1] != "Name | Value"  # never a header without a row
            assert lines.count("Name | Value") <= 1


def test_a_header_too_long_to_repeat_and_a_row_over_the_maximum(embedder) -> None:
    long_header = " | ".join(f"column{i}" for i in range(60))
    rows = [long_header] + [f"{i} | {i * 2}" for i in range(60)]
    limits = ChunkLimits(target=60, hard_max=80, overlap=0)
    chunks = Chunker(embedder.count_tokens, limits).chunk("w.md", [Block("\n".join(rows), 1, 61, (), "table", True)])
    assert all(c.token_count <= 80 for c in chunks)
    assert not any(c.text.startswith("column0") for c in chunks if c.start_line > 2)  # too long to repeat
    huge_row = " | ".join(f"value{i}" for i in range(300))
    rows = ["A | B", "1 | 2", huge_row, "3 | 4"]
    chunks = Chunker(embedder.count_tokens, limits).chunk("r.md", [Block("\n".join(rows), 1, 4, (), "table", True)])
    assert all(c.token_count <= 80 for c in chunks)
    pieces = [c.text.removeprefix("A | B\n").removesuffix("\n3 | 4") for c in chunks[1:]]
    assert "".join(pieces) == huge_row  # cut as before; a piece gets the header only where it fits beside it
    assert chunks[-1].text.startswith("A | B\n")
    assert sum("3 | 4" in c.text for c in chunks) == 1 and chunks[-1].end_line == 4
