"""A whole knowledge base on PostgreSQL: kb's ingest, search, answers, threads and removal reach the store only
through its contract (``[store] backend = "postgres"``), and another knowledge base folder on the same schema
(another machine's kb, with its own indexes) builds its index from the store alone with ``kb reindex``
(tests/test_shared.py: folders following the feed on their own, and ingest workers sharing a folder).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kb_postgres.store import PostgresStore

import kb_core
from kb_core import KnowledgeBase, load_config
from kb_core.testing import ScriptedPlugin, TestIndexesPlugin, extractive, load_registry

CORPUS = Path(__file__).resolve().parents[3] / "fixtures" / "corpus"
QUESTION = "What does the Heliograph daemon do?"


@pytest.fixture
def open_kb(postgres_options: dict[str, object]) -> Iterator[Callable[[Path], KnowledgeBase]]:
    """A knowledge base whose folder is ``folder`` and whose store is the test's PostgreSQL schema, on the test
    indexes with the scripted model; closed after the test."""
    extra = [("test-indexes", TestIndexesPlugin()), ("scripted", ScriptedPlugin(extractive))]
    plugins = load_registry(extra_plugins=extra)
    opened: list[KnowledgeBase] = []

    def open_one(folder: Path) -> KnowledgeBase:
        overrides = {
            "store.backend": "postgres",
            "backends.postgres": dict(postgres_options),
            "indexes.enabled": ["test-lexical"],
            "models.llm.backend": "scripted",
        }
        opened.append(KnowledgeBase(load_config(kb_dir=folder, overrides=overrides, environ={}), plugins))
        return opened[-1]

    yield open_one
    for kb in opened:
        kb.close()


def lexical(kb: KnowledgeBase, text: str) -> list[str]:
    return [hit.doc_path for hit in kb_core.search(kb, kb_core.SearchQuery(text, k=3, mode="lexical")).hits]


@pytest.mark.slow  # (runs kb reindex as a command)
def test_a_knowledge_base_on_postgres_ingests_searches_answers_and_forgets(
    open_kb: Callable[[Path], KnowledgeBase],
    run_kb: Callable[..., subprocess.CompletedProcess[str]],
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    files = sorted(p for p in corpus.rglob("*") if p.is_file())
    kb = open_kb(tmp_path / "one")
    report = kb_core.ingest_paths(kb, [corpus])
    assert isinstance(kb.store, PostgresStore) and not (tmp_path / "one" / "kb.sqlite3").exists()
    assert report.failed == [] and len(report.added) == len(files) == kb.store.count_documents()
    assert lexical(kb, "Heliograph daemon")[0].endswith("heliograph.md")

    answer = kb_core.ask(kb, QUESTION)
    assert answer.grounded and answer.citations
    turn = kb_core.ask_in_thread(kb, "And who maintains it?", None)
    entries, total = kb_core.list_answers(kb.store)
    assert total == 2 and {e.answer_id for e in entries} == {answer.answer_id, turn.answer.answer_id}
    assert [t.thread_id for t in kb_core.list_threads(kb.store)] == [turn.thread_id]
    assert kb_core.stored_thread(kb.store, turn.thread_id).turns[0].asked == "And who maintains it?"

    cited = answer.citations[0].citation.path
    (corpus / cited).write_text("Nothing about that any more.\n", encoding="utf-8")
    again = kb_core.ingest_paths(kb, [corpus])
    assert again.updated == [cited] and again.answers is not None
    assert kb_core.stored_answer(kb.store, answer.answer_id).state == "stale"  # the cited text changed

    removed = kb_core.remove_documents(kb, ["zh/"])
    assert removed and all(path.startswith("zh/") for path in removed)
    assert kb.store.count_documents() == len(files) - len(removed)
    found = {text: lexical(kb, text) for text in ("Heliograph daemon", "release process", "長城")}
    assert found["長城"] == [] and found["Heliograph daemon"]

    rebuilt = run_kb(tmp_path / "two", "reindex", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    elsewhere = open_kb(tmp_path / "two")  # another folder: its own test index, the same store
    assert {text: lexical(elsewhere, text) for text in found} == found
    assert kb_core.list_answers(elsewhere.store)[1] == 2
