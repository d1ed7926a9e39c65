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
        blocks.append(Block("\n".join(lines), line, line + len(lines) - 1, tuple(headings), verbatim=True))
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
