"""The chunker on a table continued from an earlier block (``Block.header``): its rows under that header."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_chunker import ROW
from test_chunker import TABLE_LIMITS as LIMITS

from kb_core.answers.tables import readable_tables
from kb_core.ingest.chunker import Chunker, ChunkLimits
from kb_core.storage.lines import stored_lines
from kb_core.types import Block

HEADER = "Segment | 2019 | 2018"
PAGE_1 = [
    Block("Page 1", 1, 1, ("Page 1",), "heading", verbatim=True),
    Block(f"{HEADER}\nFixed Price | 1,452.4 | 1,146.2", 2, 3, ("Page 1",), "table", verbatim=True),
]


def _page_2(rows: list[str], header: str = HEADER) -> list[Block]:
    return [
        Block("Page 2", 4, 4, ("Page 2",), "heading", verbatim=True),
        Block("\n".join(rows), 5, 4 + len(rows), ("Page 2",), "table", verbatim=True, header=header),
    ]


def test_the_rows_of_a_continued_table_chunk_under_its_header_after_the_page_line(embedder) -> None:
    chunker = Chunker(embedder.count_tokens, ChunkLimits())
    chunks = chunker.chunk("r.pdf", [*PAGE_1, *_page_2(["Cost Plus | 310.0 | 295.5", "Total | 1,762.4 | 1,441.7"])])
    assert [(c.text, c.start_line, c.end_line) for c in chunks] == [
        (f"Page 1\n\n{HEADER}\nFixed Price | 1,452.4 | 1,146.2", 1, 3),
        (f"Page 2\n\n{HEADER}\nCost Plus | 310.0 | 295.5\nTotal | 1,762.4 | 1,441.7", 4, 6),  # header not in 4-6
    ]
    assert readable_tables(chunks[1].text).split("\n")[2:] == [
        "Segment = Cost Plus; 2019 = 310.0; 2018 = 295.5",
        "Segment = Total; 2019 = 1,762.4; 2018 = 1,441.7",
    ]
    lines, exact = stored_lines(chunks)  # the document's text put back: the repeated header is not a line of it
    assert exact and lines == [
        "Page 1",
        HEADER,
        "Fixed Price | 1,452.4 | 1,146.2",
        "Page 2",
        "Cost Plus | 310.0 | 295.5",
    ] + ["Total | 1,762.4 | 1,441.7"]


def test_without_the_header_field_the_first_row_would_be_the_header(embedder) -> None:
    """What the field fixes: the same block with no header names values by its first data row."""
    rows = ["Cost Plus | 310.0 | 295.5", "Total | 1,762.4 | 1,441.7"]
    chunks = Chunker(embedder.count_tokens, ChunkLimits()).chunk("r.pdf", _page_2(rows, header=""))
    assert chunks[0].text == "Page 2\n\n" + "\n".join(rows)
    assert "Cost Plus = Total; 310.0 = 1,762.4; 295.5 = 1,441.7" in readable_tables(chunks[0].text)


def test_a_long_continued_table_repeats_the_header_in_every_chunk_outside_the_span(embedder) -> None:
    rows = [f"widget number {i} | {i * 3}.50 EUR | {i * 7}" for i in range(1, 40)]
    blocks = [*_page_2(rows), Block("After the table.", 5 + len(rows), 5 + len(rows), ("Page 2",), verbatim=True)]
    chunks = Chunker(embedder.count_tokens, ChunkLimits(target=80, hard_max=100, overlap=20)).chunk("p.pdf", blocks)
    assert len(chunks) > 3 and all(c.token_count <= 100 for c in chunks)
    assert chunks[0].text.startswith(f"Page 2\n\n{HEADER}\nwidget number 1 |") and chunks[0].start_line == 4
    for chunk in chunks[1:-1]:
        lines = chunk.text.split("\n")
        assert lines[0] == HEADER and lines[1:] == rows[chunk.start_line - 5 : chunk.end_line - 4]
    assert [a.end_line + 1 for a in chunks[:-2]] == [b.start_line for b in chunks[1:-1]]  # each row in one chunk
    assert chunks[-1].text == "After the table."


def test_a_header_on_another_kind_of_block_or_over_two_lines_is_ignored(embedder) -> None:
    chunker = Chunker(embedder.count_tokens, ChunkLimits())
    paragraph = Block("Plain words here.", 1, 1, (), "paragraph", verbatim=True, header=HEADER)
    assert chunker.chunk("a.pdf", [paragraph])[0].text == "Plain words here."
    table = Block("1 | 2", 1, 1, (), "table", verbatim=True, header="A | B\nC | D")
    assert chunker.chunk("a.pdf", [table])[0].text == "1 | 2"


def test_a_header_too_long_to_fit_beside_a_row_is_not_repeated(embedder) -> None:
    long_header = " | ".join(f"column{i}" for i in range(60))
    rows = [f"{i} | {i * 2}" for i in range(30)]
    block = Block("\n".join(rows), 1, 30, (), "table", verbatim=True, header=long_header)
    chunks = Chunker(embedder.count_tokens, ChunkLimits(target=60, hard_max=80, overlap=0)).chunk("w.pdf", [block])
    assert all(c.token_count <= 80 for c in chunks) and not any("column0" in c.text for c in chunks)
    assert "\n".join(c.text for c in chunks) == "\n".join(rows)


WORDS = st.lists(st.sampled_from(["alpha", "beta", "서울", "长城", "x" * 30, "1234"]), min_size=1, max_size=30)


@st.composite
def continued(draw: st.DrawFn) -> tuple[list[Block], Block]:
    """A page of a document: maybe its page line, prose, then a continued table (header set), maybe prose."""
    path = ("Page 2",)
    blocks: list[Block] = []
    line = 10
    if draw(st.booleans()):
        blocks.append(Block("Page 2", line, line, path, "heading", verbatim=True))
        line += 1
    for _ in range(draw(st.integers(0, 2))):
        blocks.append(Block(" ".join(draw(WORDS)), line, line, path, verbatim=True))
        line += 1
    rows = draw(st.lists(ROW, min_size=1, max_size=60))
    table = Block("\n".join(rows), line, line + len(rows) - 1, path, "table", verbatim=True, header=draw(ROW))
    blocks.append(table)
    line = table.end_line + 1
    for _ in range(draw(st.integers(0, 2))):
        blocks.append(Block(" ".join(draw(WORDS)), line, line, path, verbatim=True))
        line += 1
    return blocks, table


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=continued(), limits=LIMITS, with_offsets=st.booleans())
def test_every_row_of_a_continued_table_lies_in_one_chunk_right_under_its_header(
    embedder, document: tuple[list[Block], Block], limits: ChunkLimits, with_offsets: bool
) -> None:
    blocks, table = document
    rows = table.text.split("\n")
    fits = embedder.count_tokens([table.header + "\n" + max(rows, key=len)])[0] <= limits.hard_max // 2
    chunker = Chunker(embedder.count_tokens, limits, embedder.token_starts if with_offsets else None)
    chunks = chunker.chunk("t.pdf", blocks)
    assert all(c.token_count <= limits.hard_max for c in chunks)
    for offset in range(len(rows)):
        holding = [c for c in chunks if c.start_line <= table.start_line + offset <= c.end_line]
        assert len(holding) == 1 or not fits
    if not fits:
        return
    for chunk in chunks:
        lines = chunk.text.split("\n")
        first, last = max(chunk.start_line, table.start_line), min(chunk.end_line, table.end_line)
        if first > last:
            continue  # no row of the table
        own = rows[first - table.start_line : last - table.start_line + 1]
        if chunk.start_line < table.start_line:  # after what comes before the table in this chunk
            assert "\n\n" + "\n".join([table.header, *own]) in chunk.text
        else:  # a chunk that starts in the table starts with its header
            assert lines[0] == table.header and lines[1:] == own  # and holds its rows only, cited by their lines
            assert table.start_line <= chunk.start_line <= chunk.end_line <= table.end_line


def test_a_chunk_halved_after_the_real_count_keeps_the_repeated_header_with_its_row() -> None:
    """A tokenizer that counts a blank line as 10 tokens makes the first chunk too long once joined."""

    def count_tokens(texts: Sequence[str]) -> list[int]:
        return [len(text.split()) + 2 + 10 * text.count("\n\n") for text in texts]

    rows = [f"r{i} " + " ".join("w" * 9) for i in range(5)]
    chunks = Chunker(count_tokens, ChunkLimits(target=40, hard_max=40, overlap=0)).chunk(
        "h.pdf", _page_2(rows, "A | B")
    )
    assert [c.text.split("\n") for c in chunks] == [
        ["Page 2", "", "A | B", rows[0]],
        ["A | B", rows[1], rows[2]],
        ["A | B", rows[3], rows[4]],
    ]
    assert [(c.start_line, c.end_line) for c in chunks] == [(4, 5), (6, 7), (8, 9)]
