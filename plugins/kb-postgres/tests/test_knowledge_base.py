"""A whole knowledge base on PostgreSQL: kb's ingest, search, answers, threads and removal reach the store only
through its contract (``[store] backend = "postgres"``), and a second knowledge base folder on the same schema
(another machine's kb, with its own indexes) builds its index from the store alone (``kb reindex``: following
the feed per folder, ``index_state`` per server, is a later part of issue 45)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from kb_postgres.store import PostgresStore

import kb_core
from kb_core.app import KnowledgeBase
from kb_core.config import load_config
from kb_core.extend.registry import Registry
from kb_core.ingest.index_sync import rebuild_index
from kb_core.storage.answers import list_answers, stored_answer
from kb_core.storage.threads import list_threads, stored_thread
from kb_core.testing import ScriptedPlugin, TestIndexesPlugin, extractive, load_registry

CORPUS = Path(__file__).resolve().parents[3] / "fixtures" / "corpus"
QUESTION = "What does the Heliograph daemon do?"


@pytest.fixture(scope="module")
def plugins() -> Registry:
    """The installed plugins (kb-postgres among them), the test indexes and the scripted model."""
    extra = [("test-indexes", TestIndexesPlugin()), ("scripted", ScriptedPlugin(extractive))]
    return load_registry(extra_plugins=extra)


@pytest.fixture
def open_kb(plugins: Registry, postgres_options: dict[str, object]) -> Callable[[Path], KnowledgeBase]:
    """A knowledge base whose folder is ``folder`` and whose store is the test's PostgreSQL schema."""

    def open_one(folder: Path) -> KnowledgeBase:
        overrides = {
            "store.backend": "postgres",
            "backends.postgres": dict(postgres_options),
            "indexes.enabled": ["test-lexical"],
            "models.llm.backend": "scripted",
        }
        return KnowledgeBase(load_config(kb_dir=folder, overrides=overrides, environ={}), plugins)

    return open_one


def lexical(kb: KnowledgeBase, text: str) -> list[str]:
    return [hit.doc_path for hit in kb_core.search(kb, kb_core.SearchQuery(text, k=3, mode="lexical")).hits]


def test_a_knowledge_base_on_postgres_ingests_searches_answers_and_forgets(
    open_kb: Callable[[Path], KnowledgeBase], tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    files = sorted(p for p in corpus.rglob("*") if p.is_file())
    with open_kb(tmp_path / "one") as kb:
        report = kb_core.ingest_paths(kb, [corpus])
        assert isinstance(kb.store, PostgresStore) and not (tmp_path / "one" / "kb.sqlite3").exists()
        assert report.failed == [] and len(report.added) == len(files) == kb.store.count_documents()
        assert lexical(kb, "Heliograph daemon")[0].endswith("heliograph.md")

        answer = kb_core.ask(kb, QUESTION)
        assert answer.grounded and answer.citations
        turn = kb_core.ask_in_thread(kb, "And who maintains it?", None)
        entries, total = list_answers(kb.store)
        assert total == 2 and {e.answer_id for e in entries} == {answer.answer_id, turn.answer.answer_id}
        assert [t.thread_id for t in list_threads(kb.store)] == [turn.thread_id]
        assert stored_thread(kb.store, turn.thread_id).turns[0].asked == "And who maintains it?"

        cited = corpus / answer.citations[0].citation.path
        cited.write_text("Nothing about that any more.\n", encoding="utf-8")
        again = kb_core.ingest_paths(kb, [corpus])
        assert again.updated == [answer.citations[0].citation.path] and again.answers is not None
        assert stored_answer(kb.store, answer.answer_id).state == "stale"  # the citation's text changed

        removed = kb_core.remove_documents(kb, ["zh/"])
        assert removed and all(path.startswith("zh/") for path in removed)
        assert kb.store.count_documents() == len(files) - len(removed)
        found = {text: lexical(kb, text) for text in ("Heliograph daemon", "release process", "長城")}
        assert found["長城"] == [] and found["Heliograph daemon"]

    with open_kb(tmp_path / "two") as elsewhere:  # another folder: its own test index, the same store
        assert lexical(elsewhere, "Heliograph daemon") == []  # its index has not followed the store yet
        rebuild_index(elsewhere, "test-lexical")  # kb reindex: from the store alone
        assert {text: lexical(elsewhere, text) for text in found} == found
        assert list_answers(elsewhere.store)[1] == 2
