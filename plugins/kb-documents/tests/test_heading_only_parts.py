"""A part that holds headings alone (a notebook's title cell, a title-only slide, a section divider) stays in its
part: its headings are not folded into the next part's first chunk, whose citation would then start on the part
before and be linked there (``kb pages``: ``#cell=1`` for the code of cell 2). Found by bench/formats.py (issue 46).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from part_formats import code_cell, markdown_cell, notebook, pptx, slide_xml

import kb_core
from kb_core import Chunk
from kb_core.testing import TestIndexesPlugin, load_registry
from kb_documents.assemble import page_of_line


def _ingested(data: bytes, name: str) -> tuple[dict[str, Any], list[Chunk]]:
    """The document's metadata and its chunks, as ``kb ingest`` stores them (kb's own chunker and limits)."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "docs").mkdir()
        (Path(folder) / "docs" / name).write_bytes(data)
        registry = load_registry(extra_plugins=[("indexes", TestIndexesPlugin())])
        overrides = {"indexes.enabled": ["test-lexical"], "search.mode": "lexical"}
        config = kb_core.load_config(kb_dir=Path(folder) / "kb", overrides=overrides, environ={})
        with kb_core.KnowledgeBase(config, registry) as kb:
            report = kb_core.ingest_paths(kb, [Path(folder) / "docs"])
            assert report.added == [name], report
            document = kb.store.get_document(name)
            assert document is not None
            return dict(document.metadata), list(kb.store.chunks_of([name]))


def _each_chunk_in_one_part(metadata: dict[str, Any], chunks: Sequence[Chunk]) -> None:
    page_lines = metadata["page_lines"]
    for chunk in chunks:
        first, last = page_of_line(page_lines, chunk.start_line), page_of_line(page_lines, chunk.end_line)
        assert first == last, (chunk.text, chunk.start_line, chunk.end_line)
        assert chunk.heading_path[0].endswith(f" {first}"), (chunk.heading_path, chunk.start_line)


def test_a_notebooks_title_cell_is_not_cited_for_the_code_below_it() -> None:
    data = notebook([markdown_cell("# Flow analysis"), code_cell("flows = read_csv('wendle_2023.csv')")])
    metadata, chunks = _ingested(data, "flows.ipynb")
    (code,) = [c for c in chunks if "wendle_2023.csv" in c.text]
    assert page_of_line(metadata["page_lines"], code.start_line) == 2
    assert code.heading_path == ("Cell 2", "Flow analysis")  # the title still heads the cells below it
    (title,) = [c for c in chunks if c is not code]
    assert title.text == "Cell 1\nFlow analysis" and title.start_line == 1
    _each_chunk_in_one_part(metadata, chunks)


def test_a_title_only_slide_is_not_cited_for_the_next_slide() -> None:
    deck = pptx(
        [
            (slide_xml("Part two: methods"), []),
            (slide_xml("Dilution gauging", [["Salt dilution suits steep streams."]]), ["Use 1 kg of salt."]),
        ]
    )
    metadata, chunks = _ingested(deck, "deck.pptx")
    (salt,) = [c for c in chunks if "Salt dilution" in c.text]
    assert page_of_line(metadata["page_lines"], salt.start_line) == 2
    _each_chunk_in_one_part(metadata, chunks)


CELL = st.one_of(
    st.sampled_from(["# Title", "## Section", "### Sub"]).map(markdown_cell),  # a cell of a heading alone
    st.sampled_from(["## Method\nWe fit the curve.", "Plain words in a cell."]).map(markdown_cell),
    st.sampled_from(["x = 1", "print(2)\ny = 3"]).map(code_cell),
)


@settings(max_examples=40, deadline=None)  # each example is a real ingest into a new knowledge base
@given(st.lists(CELL, min_size=1, max_size=12))
def test_no_chunk_of_a_notebook_spans_two_cells(cells: list[dict[str, object]]) -> None:
    _each_chunk_in_one_part(*_ingested(notebook(cells), "nb.ipynb"))
