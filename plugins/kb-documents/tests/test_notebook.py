"""Jupyter notebooks: each cell a part ``Cell N``; markdown as text, code as code blocks, text outputs optional."""

from __future__ import annotations

import json

import pytest
from part_formats import code_cell, markdown_cell, notebook, stream

from kb_core import KbError
from kb_documents.assemble import page_of_line, parsed_text
from kb_documents.limits import Limits
from kb_documents.notebook import MAX_OUTPUT_LINES, NotebookParser

NOTEBOOK = notebook(
    [
        markdown_cell("# Yield study\n\nWe compare the panels' yield by season."),
        code_cell("import pandas as pd\nframe = pd.read_csv('yield.csv')"),
        markdown_cell("## Learning rate\nThe model trains with a learning rate of 0.003."),
        code_cell(
            "def fit(frame):\n    for season in frame.season:\n\tprint(season)\n\n    return 1",
            stream("summer 41.2 MWh\nwinter 12.9 MWh\n"),
            {"output_type": "execute_result", "data": {"text/plain": ["1"], "image/png": "iVBORw0KGgo="}},
            {"output_type": "error", "ename": "ValueError", "evalue": "bad season", "traceback": ["\x1b[0;31m..."]},
        ),
        {"cell_type": "raw", "metadata": {}, "source": "raw text"},
        markdown_cell(""),
    ]
)


def test_each_cell_is_a_part_and_code_keeps_its_indentation() -> None:
    doc = NotebookParser().parse_bytes(NOTEBOOK, "yield.ipynb")
    assert doc.title == "Yield study"
    assert parsed_text(doc.blocks).split("\n") == [
        "Cell 1",
        "Yield study",
        "We compare the panels' yield by season.",
        "Cell 2",
        "```python",
        "import pandas as pd",
        "frame = pd.read_csv('yield.csv')",
        "```",
        "Cell 3",
        "Learning rate",
        "The model trains with a learning rate of 0.003.",
        "Cell 4",
        "```python",
        "def fit(frame):",
        "    for season in frame.season:",
        "    print(season)",
        "    return 1",
        "```",
        "Output:",
        "summer 41.2 MWh",
        "winter 12.9 MWh",
        "1",
        "ValueError: bad season",
        "Cell 5",
        "raw text",
    ]  # (the trailing empty cell is left out)
    assert doc.metadata["page_unit"] == "cell" and doc.metadata["cells"] == 5
    code = next(b for b in doc.blocks if "read_csv" in b.text)
    assert code.kind == "code" and code.heading_path == ("Cell 2", "Yield study")  # markdown headings carry over
    rate = next(b for b in doc.blocks if "0.003" in b.text)
    assert rate.heading_path == ("Cell 3", "Yield study", "Learning rate")
    assert page_of_line(doc.metadata["page_lines"], rate.start_line) == 3


def test_outputs_are_left_out_when_the_option_says_so() -> None:
    doc = NotebookParser(Limits(notebook_outputs=False)).parse_bytes(NOTEBOOK, "yield.ipynb")
    text = parsed_text(doc.blocks)
    assert "summer 41.2" not in text and "Output:" not in text and "def fit(frame):" in text
    assert Limits.from_options({"notebook_outputs": False}).notebook_outputs is False


def test_a_long_output_is_cut_with_a_warning() -> None:
    cells = [code_cell("for i in range(999): print(i)", stream("".join(f"{i}\n" for i in range(999))))]
    doc = NotebookParser().parse_bytes(notebook(cells), "loop.ipynb")
    assert parsed_text(doc.blocks).count("\n") == 1 + 3 + 1 + MAX_OUTPUT_LINES - 1
    assert doc.warnings == (f"cell 1: kept {MAX_OUTPUT_LINES} of its 999 lines of output",)


def test_nbformat_3_worksheets_are_read() -> None:
    old = {
        "nbformat": 3,
        "worksheets": [
            {
                "cells": [
                    {"cell_type": "heading", "level": 1, "source": "Old notebook"},
                    {"cell_type": "code", "input": "x = 1", "language": "python", "outputs": []},
                ]
            }
        ],
    }
    doc = NotebookParser().parse_bytes(json.dumps(old).encode(), "old.ipynb")
    assert parsed_text(doc.blocks).split("\n") == ["Cell 1", "Old notebook", "Cell 2", "```", "x = 1", "```"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not valid JSON"),
        (b'{"cells": [', "not valid JSON \\(line 1, column 12"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[1, 2]", "its JSON is not an object"),
        (b'{"metadata": {}}', "it has no cells"),
        (b'{"cells": [{"cell_type": "markdown", "source": ""}]}', "the .ipynb has no text"),
        (b"[" * 100_000 + b"]" * 100_000, "nests its JSON too deeply|its JSON is not an object"),
        (b'{"cells": 5}', "it has no cells"),
    ],
)
def test_bad_notebooks_are_one_line(data: bytes, message: str) -> None:
    with pytest.raises(KbError, match=message) as caught:
        NotebookParser().parse_bytes(data, "bad.ipynb")
    assert "\n" not in str(caught.value)


def test_odd_cells_and_fields_are_skipped_not_fatal() -> None:
    cells = [5, {"cell_type": "code", "source": ["a = 1\n", 7], "outputs": [None, {"output_type": "stream"}]}]
    doc = NotebookParser().parse_bytes(json.dumps({"cells": cells, "metadata": []}).encode(), "odd.ipynb")
    assert parsed_text(doc.blocks).split("\n") == ["Cell 1", "```", "a = 1", "```"]
