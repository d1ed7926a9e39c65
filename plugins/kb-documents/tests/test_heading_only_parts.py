"""A part that holds headings alone (a notebook's title cell, a title-only slide, a section divider) stays in its
part: its headings are not folded into the next part's first chunk, whose citation would then start on the part
before and be linked there (``kb pages``: ``#cell=1`` for the code of cell 2). Found by bench/formats.py (issue 46).
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st
from part_formats import code_cell, markdown_cell, notebook, pptx, slide_xml

from kb_core.ingest.chunker import Chunker, ChunkLimits
from kb_core.plugin import ParsedDocument
from kb_core.types import Chunk
from kb_documents.assemble import page_of_line
from kb_documents.limits import Limits
from kb_documents.notebook import NotebookParser
from kb_documents.pptx import PptxParser


def _chunks(doc: ParsedDocument, path: str) -> list[Chunk]:
    """The document's chunks as kb cuts them (tokens counted as words, plus the two special ones)."""
    return Chunker(lambda texts: [len(t.split()) + 2 for t in texts], ChunkLimits(60, 90, 10)).chunk(path, doc.blocks)


def _each_chunk_in_one_part(doc: ParsedDocument, chunks: Sequence[Chunk]) -> None:
    page_lines = doc.metadata["page_lines"]
    for chunk in chunks:
        first, last = page_of_line(page_lines, chunk.start_line), page_of_line(page_lines, chunk.end_line)
        assert first == last, (chunk.text, chunk.start_line, chunk.end_line)
        assert chunk.heading_path[0].endswith(f" {first}"), (chunk.heading_path, chunk.start_line)


def test_a_notebooks_title_cell_is_not_cited_for_the_code_below_it() -> None:
    data = notebook([markdown_cell("# Flow analysis"), code_cell("flows = read_csv('wendle_2023.csv')")])
    doc = NotebookParser().parse_bytes(data, "flows.ipynb")
    chunks = _chunks(doc, "flows.ipynb")
    (code,) = [c for c in chunks if "wendle_2023.csv" in c.text]
    assert page_of_line(doc.metadata["page_lines"], code.start_line) == 2
    assert code.heading_path == ("Cell 2", "Flow analysis")  # the title still heads the cells below it
    (title,) = [c for c in chunks if c is not code]
    assert title.text == "Cell 1\nFlow analysis" and title.start_line == 1
    _each_chunk_in_one_part(doc, chunks)


def test_a_title_only_slide_is_not_cited_for_the_next_slide() -> None:
    deck = pptx(
        [
            (slide_xml("Part two: methods"), []),
            (slide_xml("Dilution gauging", [["Salt dilution suits steep streams."]]), ["Use 1 kg of salt."]),
        ]
    )
    doc = PptxParser(Limits()).parse_bytes(deck, "deck.pptx")
    chunks = _chunks(doc, "deck.pptx")
    (salt,) = [c for c in chunks if "Salt dilution" in c.text]
    assert page_of_line(doc.metadata["page_lines"], salt.start_line) == 2
    _each_chunk_in_one_part(doc, chunks)


CELL = st.one_of(
    st.sampled_from(["# Title", "## Section", "### Sub"]).map(markdown_cell),  # a cell of a heading alone
    st.sampled_from(["## Method\nWe fit the curve.", "Plain words in a cell."]).map(markdown_cell),
    st.sampled_from(["x = 1", "print(2)\ny = 3"]).map(code_cell),
)


@given(st.lists(CELL, min_size=1, max_size=12))
def test_no_chunk_of_a_notebook_spans_two_cells(cells: list[dict[str, object]]) -> None:
    doc = NotebookParser().parse_bytes(notebook(cells), "nb.ipynb")
    _each_chunk_in_one_part(doc, _chunks(doc, "nb.ipynb"))
