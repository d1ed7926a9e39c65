"""The folder and golden set of ``bench/formats.py`` (issue 46) cannot rot: each answerable question's fact is
written in exactly the part it expects (the message, the slide's text or notes, the chapter, the cell) and
nowhere else, as kb reads and cites it.

The folder is made by ``bench/formats_samples.py`` and ingested on the test indexes (no model); every chunk
holding a fact must be of the expected document, its heading path must start with the expected part, and its
first line (what a citation names, and what ``kb pages`` turns into ``#slide=N``) must lie in that part.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kb_core.app import KnowledgeBase
from kb_core.config import load_config
from kb_core.evaluation.answers import doc_matches
from kb_core.evaluation.golden import load_golden
from kb_core.ingest.pipeline import ingest_paths
from kb_core.testing import TestIndexesPlugin, load_registry
from kb_core.types import Chunk

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from formats_samples import GOLDEN, part_of, write_folder  # noqa: E402

pytestmark = pytest.mark.needs_plugins  # kb-mail and kb-documents read the folder
LINES = [json.loads(x) for x in GOLDEN.read_text(encoding="utf-8").splitlines() if x.strip()]
ANSWERABLE = [x for x in LINES if x["answerable"]]
UNITS = {"slide notes": "Slide", "slide text": "Slide", "chapter": "Chapter", "cell": "Cell"}


def _flat(text: str) -> str:
    return " ".join(text.split()).casefold()


@pytest.fixture(scope="module")
def chunks(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Chunk], dict[str, dict[str, object]]]:
    """Every chunk of the ingested folder, and each document's metadata."""
    root = tmp_path_factory.mktemp("formats")
    write_folder(root / "folder")
    registry = load_registry(extra_plugins=[("indexes", TestIndexesPlugin())])
    overrides = {"indexes.enabled": ["test-lexical"], "search.mode": "lexical"}
    with KnowledgeBase(load_config(kb_dir=root / "kb", overrides=overrides, environ={}), registry) as kb:
        report = ingest_paths(kb, [root / "folder"])
        assert not report.failed, report.failed
        documents = kb.store.list_documents()
        found = kb.store.chunks_of([d.path for d in documents])
        return found, {d.path: d.metadata for d in documents}


def test_the_golden_set_is_the_size_the_issue_asks_and_loads_as_kb_reads_it() -> None:
    questions = load_golden(GOLDEN)
    assert len(questions) == len(LINES) >= 40
    assert len(ANSWERABLE) >= 32 and len(LINES) - len(ANSWERABLE) >= 8
    assert {x["kind"] for x in ANSWERABLE} >= {"message", "slide notes", "slide text", "chapter", "cell", "odt", "ods"}
    assert len({x["id"] for x in LINES}) == len(LINES)
    assert all(q.expected_docs and q.must_contain for q in questions if q.answerable)


def test_the_folder_is_the_same_bytes_every_time(tmp_path: Path) -> None:
    first = {p.name: p.read_bytes() for p in write_folder(tmp_path / "a")}
    second = {p.name: p.read_bytes() for p in write_folder(tmp_path / "b")}
    assert first == second and len(first) == 9


@pytest.mark.parametrize("line", ANSWERABLE, ids=[x["id"] for x in ANSWERABLE])
def test_each_fact_is_in_exactly_the_part_its_question_expects(
    line: dict[str, Any], chunks: tuple[list[Chunk], dict[str, dict[str, object]]]
) -> None:
    found, metadata = chunks
    fact = _flat(str(line["fact"]))
    holding = [c for c in found if fact in _flat(c.text)]
    assert holding, f"{line['id']}: {line['fact']!r} is in no chunk"
    (expected,) = line["expected_docs"]
    elsewhere = [c.doc_path for c in holding if not doc_matches(c.doc_path, expected)]
    assert not elsewhere, f"{line['id']}: {line['fact']!r} is also in {elsewhere}"
    assert all(_flat(m) in _flat(c.text) for c in holding for m in line["must_contain"])
    kind, part = line["kind"], line["part"]
    if kind not in UNITS:
        return
    for chunk in holding:
        assert chunk.heading_path[0] == f"{UNITS[kind]} {part}", (line["id"], chunk.heading_path)
        assert part_of(metadata[chunk.doc_path], chunk.start_line) == part, (line["id"], chunk.start_line)
        assert ("Speaker notes" in chunk.heading_path) == (kind == "slide notes"), (line["id"], chunk.heading_path)
