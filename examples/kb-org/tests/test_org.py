"""kb-org proves its parser with kb's contract test kit, then is used by a real ingest."""

from __future__ import annotations

from pathlib import Path

import pytest

import kb_core
from kb_core.plugin import Parser
from kb_core.testing import ParserContract
from kb_org import OrgParser

PLAN = """#+TITLE: Garden plan
* Vegetables
Tomatoes go by the south wall.
They need stakes.

** Watering
Water the tomatoes every second evening.
* Flowers
#+STARTUP: overview
Sunflowers along the fence.
"""


class TestOrgParserContract(ParserContract):
    samples = (PLAN, "* One headline\nand one line under it.\n", "No headline at all.\n")
    sample_path = "notes/plan.org"

    @pytest.fixture
    def parser(self) -> Parser:
        return OrgParser()


def test_headlines_nest_and_the_title_comes_from_the_keyword() -> None:
    document = OrgParser().parse(PLAN, "notes/plan.org")
    assert document.title == "Garden plan"
    watering = next(b for b in document.blocks if "every second evening" in b.text)
    assert watering.heading_path == ("Vegetables", "Watering")
    assert (watering.start_line, watering.end_line) == (7, 7)
    sunflowers = next(b for b in document.blocks if "Sunflowers" in b.text)
    assert sunflowers.heading_path == ("Flowers",)


def test_kb_finds_org_files_through_the_plugin(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "plan.org").write_text(PLAN, encoding="utf-8")
    overrides = {"indexes.enabled": ["tantivy"]}
    with kb_core.open_kb(kb_dir=tmp_path / "kb", overrides=overrides) as kb:
        report = kb_core.ingest_paths(kb, [notes])
        assert report.added == ["plan.org"] and not report.failed
        hits = kb_core.search(kb, kb_core.SearchQuery("tomatoes watering evening", mode="lexical", k=3)).hits
    assert hits and str(hits[0].citation) == "plan.org#L7-L7"
    assert hits[0].heading_path == ("Vegetables", "Watering")
