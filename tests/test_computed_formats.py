"""Computed answers over every kind of table kb reads (issue 43, deliver 4): CSV, Markdown and HTML tables, each
ingested by kb's own parser, then worked out from the chunks as stored, with the scripted model writing the
computation (kb-documents' tests do the same for XLSX)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kb_core import ingest_paths
from kb_core.answers.pipeline import AskOptions, RagPipeline
from kb_core.app import KnowledgeBase
from kb_core.storage.answers import stored_answer
from kb_core.testing import ScriptedLanguageModel
from kb_core.types import Answer, Hit, ModelRef

FILES = {
    "sales.csv": 'Region,2018,2019\nNorth America,"5,200","6,046"\nEurope,"3,100","2,950"\nAsia,800,"1,210"\n',
    "sales.md": "# Sales\n\n| Region | 2018 | 2019 |\n|---|---|---|\n| North America | 5,200 | 6,046 |\n"
    "| Europe | 3,100 | 2,950 |\n| Asia | 800 | 1,210 |\n",
    "sales.html": "<html><body><h1>Sales</h1><table><tr><th>Region</th><th>2018</th><th>2019</th></tr>"
    "<tr><td>North America</td><td>5,200</td><td>6,046</td></tr><tr><td>Europe</td><td>3,100</td><td>2,950</td></tr>"
    "<tr><td>Asia</td><td>800</td><td>1,210</td></tr></table></body></html>",
}


def asked(kb: KnowledgeBase, name: str, question: str, reply: str) -> Answer:
    """``question`` over ``name``'s stored chunks (retrieval returns them all), the model replying ``reply``."""
    chunks = kb.store.chunks_of([name])
    assert chunks, f"{name} was not stored"
    hits = [Hit(c.chunk_id, c.doc_path, 0.9, i + 1, c.citation, c.heading_path) for i, c in enumerate(chunks)]
    llm = ScriptedLanguageModel([reply])
    pipeline = RagPipeline(kb.config, kb.store, lambda query: hits, lambda: llm, lambda: ModelRef("e", "onnx", 384))
    return pipeline.ask(question, AskOptions())


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_change_and_an_average_are_worked_out_from_each_kind_of_table(
    name: str, make_kb: Callable[..., KnowledgeBase], tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / name).write_text(FILES[name], encoding="utf-8")
    kb = make_kb(rag__computations=True)
    assert not ingest_paths(kb, [folder]).failed
    change = asked(kb, name, "By how much did sales in Europe change from 2018 to 2019?", "CALC: 2,950 - 3,100 [#1]")
    assert change.grounded, change.note
    assert change.answer.startswith("-150 (2,950 - 3,100) [#1]")
    assert change.computation is not None and [o.marker for o in change.computation.operands] == [1, 1]
    wrong_row = asked(kb, name, "By how much did sales in Europe change from 2018 to 2019?", "CALC: 1,210 - 800 [#1]")
    assert (wrong_row.grounded, wrong_row.refusal_detail) == (False, "operand_off_question")
    average = asked(kb, name, "What was the average of sales in Asia in 2018 and 2019?", "CALC: avg(800, 1,210) [#1]")
    assert average.grounded and average.answer.startswith("1,005"), average.note


def test_a_saved_computation_is_stale_once_an_operand_changes(
    make_kb: Callable[..., KnowledgeBase], tmp_path: Path
) -> None:
    """A computed answer cites the passages its operands come from, so the re-check after an ingest finds it stale
    when an operand's number changes, with both wordings, as any saved answer."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "sales.csv").write_text(FILES["sales.csv"], encoding="utf-8")
    kb = make_kb(rag__computations=True)
    assert not ingest_paths(kb, [folder]).failed
    change = asked(
        kb, "sales.csv", "By how much did sales in Europe change from 2018 to 2019?", "CALC: 2,950 - 3,100 [#1]"
    )
    assert change.grounded and change.answer_id, change.note
    assert stored_answer(kb.store, change.answer_id).state == "valid"
    (folder / "sales.csv").write_text(FILES["sales.csv"].replace('"2,950"', '"2,990"'), encoding="utf-8")
    report = ingest_paths(kb, [folder]).answers
    assert report is not None and [s.answer_id for s in report.stale_answers] == [change.answer_id]
    now = stored_answer(kb.store, change.answer_id)
    assert now.state == "stale"
    assert any("2,950" in c.cited_text and "2,990" in (c.now_text or "") for c in now.citations)
