"""End to end: decks, books, OpenDocument files and notebooks ingested, searched, asked and cited by part.

Retrieval is kb's in-process test index; the language model is scripted (it answers with the text
of the first passage it is given, cited), so what is checked is what kb finds and cites.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from part_formats import code_cell, epub, markdown_cell, notebook, odf, pptx, slide_xml, stream, xhtml, zipped

import kb_core
from kb_core import Citation
from kb_core.testing import ScriptedPlugin, TestIndexesPlugin, extractive, load_registry
from kb_documents.cli import resolve

DECK = pptx(
    [
        (slide_xml("Quarterly Review", [["Heliograph Systems, third quarter"]]), ["Welcome everyone."]),
        (
            slide_xml("Output by plant", [["Lakeside led the quarter"]], [["Plant", "MWh"], ["Lakeside", "4210"]]),
            ["The Ridgeback transformer fault was repaired on 14 September by the duty engineer."],
        ),
    ]
)
BOOK = epub(
    [
        ("one.xhtml", xhtml("Dawn", "<h1>Dawn</h1><p>The ferry left the harbour at dawn.</p>")),
        ("two.xhtml", xhtml("Keeper", "<h1>The Keeper</h1><p>Ada Lindqvist logged every ship by hand.</p>")),
    ],
    title="Coast Stories",
)
NOTEBOOK = notebook(
    [
        markdown_cell("# Yield study"),
        code_cell("import pandas as pd"),
        markdown_cell("## Training\nThe regression model trains with a learning rate of 0.003."),
        code_cell("fit(rate=0.003)", stream("validation error 4.1 percent\n")),
    ]
)
GOOD = {
    "deck.pptx": DECK,
    "visit.odp": odf(
        "presentation",
        '<draw:page><draw:frame presentation:class="title"><draw:text-box><text:p>Arrival</text:p></draw:text-box>'
        '</draw:frame><presentation:notes><draw:frame presentation:class="notes"><draw:text-box>'
        "<text:p>Remind visitors the goods lift is out of order.</text:p></draw:text-box></draw:frame>"
        "</presentation:notes></draw:page>",
    ),
    "coast.epub": BOOK,
    "manual.odt": odf(
        "text", '<text:h text:outline-level="1">Manual</text:h><text:p>Grease the tracker gearbox yearly.</text:p>'
    ),
    "budget.ods": odf(
        "spreadsheet",
        '<table:table table:name="Budget"><table:table-row><table:table-cell><text:p>Item</text:p></table:table-cell>'
        "<table:table-cell><text:p>Cost</text:p></table:table-cell></table:table-row><table:table-row>"
        "<table:table-cell><text:p>Inverter spares</text:p></table:table-cell><table:table-cell><text:p>7300</text:p>"
        "</table:table-cell></table:table-row></table:table>",
    ),
    "yield.ipynb": NOTEBOOK,
}
_BOMB_XML = b'<?xml version="1.0"?><p:sld xmlns:p="x">' + b" " * 5_000_000 + b"</p:sld>"
BAD = {
    "encrypted.pptx": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(1024),
    "corrupt.pptx": DECK[: len(DECK) // 3],
    "bomb.pptx": zipped({"ppt/presentation.xml": "<p/>", "ppt/slides/slide1.xml": _BOMB_XML}),
    "corrupt.epub": BOOK[: len(BOOK) - 40],
    "bomb.epub": epub([("big.xhtml", "<p>" + "z" * 5_000_000 + "</p>")]),
    "encrypted.odt": odf("text", "<text:p>payroll</text:p>", encrypted=True),
    "corrupt.odt": b"PK\x03\x04" + bytes(200),
    "broken.ipynb": b'{"cells": [{"cell_type": "code", "source": "x = 1"',
}
#: What kb reports for each bad file (its one line starts so).
REASONS = {
    "encrypted.pptx": "the .pptx is password protected",
    "corrupt.pptx": "not a valid .pptx",
    "bomb.pptx": "ppt/slides/slide1.xml in the .pptx would inflate",
    "corrupt.epub": "not a valid .epub",
    "bomb.epub": "OEBPS/big.xhtml in the .epub would inflate",
    "encrypted.odt": "the .odt is password protected",
    "corrupt.odt": "not a valid .odt",
    "broken.ipynb": "the .ipynb is not valid JSON",
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, data in {**GOOD, **BAD}.items():
        (docs / name).write_bytes(data)
    return docs


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[kb_core.KnowledgeBase]:
    registry = load_registry(extra_plugins=[("indexes", TestIndexesPlugin()), ("llm", ScriptedPlugin(extractive))])
    overrides = {"indexes.enabled": ["test-lexical"], "search.mode": "lexical", "models.llm.backend": "scripted"}
    config = kb_core.load_config(kb_dir=tmp_path / "kb", overrides=overrides, environ={})
    with kb_core.KnowledgeBase(config, registry) as opened:
        yield opened


def _link(kb: kb_core.KnowledgeBase, citation: Citation) -> str:
    (linked,) = resolve(kb.store, [str(citation)])
    return linked.link


def test_every_format_is_ingested_and_each_bad_file_is_one_line(kb: kb_core.KnowledgeBase, folder: Path) -> None:
    report = kb_core.ingest_paths(kb, [folder])
    assert sorted(report.added) == sorted(GOOD)
    reasons = {w.path: w.reason for w in report.failed}
    assert sorted(reasons) == sorted(BAD)
    for name, reason in REASONS.items():
        assert reasons[name].startswith(reason) and "\n" not in reasons[name], reasons[name]
    again = kb_core.ingest_paths(kb, [folder])
    assert again.added == [] and again.unchanged == len(GOOD) and sorted(w.path for w in again.failed) == sorted(BAD)


def test_a_file_that_turns_bad_keeps_what_was_stored(kb: kb_core.KnowledgeBase, folder: Path) -> None:
    kb_core.ingest_paths(kb, [folder])
    before = kb.store.get_document("deck.pptx")
    (folder / "deck.pptx").write_bytes(BAD["corrupt.pptx"])
    report = kb_core.ingest_paths(kb, [folder])
    assert "deck.pptx" in {w.path for w in report.failed}
    after = kb.store.get_document("deck.pptx")
    assert before is not None and after is not None and after.content_hash == before.content_hash


@pytest.mark.parametrize(
    ("question", "path", "heading", "part"),
    [
        (
            "When was the Ridgeback transformer fault repaired?",
            "deck.pptx",
            ("Slide 2", "Output by plant", "Speaker notes"),
            "slide=2",
        ),
        ("Who logged every ship by hand?", "coast.epub", ("Chapter 2", "The Keeper"), "chapter=2"),
        (
            "What learning rate does the regression model train with?",
            "yield.ipynb",
            ("Cell 3", "Yield study", "Training"),
            "cell=3",
        ),
        ("Which lift is out of order for visitors?", "visit.odp", ("Slide 1", "Arrival", "Speaker notes"), "slide=1"),
        ("What does the validation error come to?", "yield.ipynb", ("Cell 4", "Yield study", "Training"), "cell=4"),
    ],
)
def test_a_question_is_answered_from_the_right_part_and_cited_with_it(
    kb: kb_core.KnowledgeBase, folder: Path, question: str, path: str, heading: tuple[str, ...], part: str
) -> None:
    kb_core.ingest_paths(kb, [folder])
    hit = kb_core.search(kb, kb_core.SearchQuery(text=question, mode="lexical", k=3)).hits[0]
    assert (hit.doc_path, hit.heading_path) == (path, heading)
    answer = kb_core.ask(kb, question, kb_core.AskOptions(backend="scripted"))
    assert answer.grounded, answer.refusal_reason
    cited = answer.citations[0]
    assert (cited.citation.path, cited.heading_path) == (path, heading)
    link = _link(kb, cited.citation)
    assert link == f"{path}#{part}&L{cited.citation.start_line}-L{cited.citation.end_line}"
    count = len(kb.store.get_document(path).metadata["page_lines"])  # type: ignore[union-attr]
    assert Citation.parse(link, lambda _path: count) == cited.citation  # kb reads back the link it printed


@pytest.mark.slow
def test_kb_ingest_exits_4_naming_each_bad_file(folder: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")}
    env |= {"KB_CONFIG": str(config), "KB_HOME": str(tmp_path / "kb")}
    kb = str(Path(sys.executable).parent / "kb")
    run = subprocess.run(
        [kb, "ingest", str(folder), "--json"], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert run.returncode == 4, run.stderr
    assert "Traceback" not in run.stderr
    payload = json.loads(run.stdout)
    assert sorted(payload["added"]) == sorted(GOOD)
    assert {item["path"]: item["reason"].split(" (")[0] for item in payload["failed"]}.keys() == BAD.keys()
    pages = subprocess.run(
        [kb, "pages", "deck.pptx#L1-L2", "--json"], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert json.loads(pages.stdout)["citations"][0]["link"] == "deck.pptx#slide=1&L1-L2", pages.stderr
