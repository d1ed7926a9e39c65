"""Ingestion: incremental, idempotent, atomic per document, and safe with bad input.

These tests use kb_core.testing's lexical WordIndex as the derived index that must follow the
store of record (no engine installed); embeddings are left out to keep them fast.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from kbtest import FIXTURES, LEXICAL

from kb_core.app import KnowledgeBase
from kb_core.ingest.index_sync import index_problems, sync_all
from kb_core.ingest.pipeline import Ingester, ingest_paths, remove_documents
from kb_core.types import SearchQuery


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def _lexical(kb: KnowledgeBase, text: str) -> list[str]:
    return sorted({hit.doc_path for hit in kb.index(LEXICAL).search(SearchQuery(text=text, k=50, mode="lexical"))})


@pytest.fixture
def lexical_kb(make_kb):  # type: ignore[no-untyped-def]
    return make_kb(indexes__enabled=[LEXICAL])


def test_incremental_ingest_adds_skips_updates_and_removes(tmp_path: Path, lexical_kb: KnowledgeBase) -> None:
    docs = tmp_path / "docs"
    _write(
        docs,
        {
            "a.md": "# Alpha\n\nThe aardvark eats ants.\n",
            "sub/b.txt": "Bees make honey.\n",
            "c.md": "# Gamma\n\nA capybara swims.\n",
        },
    )
    first = ingest_paths(lexical_kb, [docs])
    assert sorted(first.added) == ["a.md", "c.md", "sub/b.txt"]
    assert (first.updated, first.removed, first.unchanged) == ([], [], 0)
    assert _lexical(lexical_kb, "aardvark") == ["a.md"]

    again = ingest_paths(lexical_kb, [docs])
    assert (again.added, again.updated, again.removed, again.unchanged) == ([], [], [], 3)

    _write(docs, {"a.md": "# Alpha\n\nThe armadillo digs.\n"})
    (docs / "c.md").unlink()
    third = ingest_paths(lexical_kb, [docs])
    assert third.updated == ["a.md"] and third.removed == ["c.md"] and third.unchanged == 1
    assert _lexical(lexical_kb, "aardvark") == []
    assert _lexical(lexical_kb, "armadillo") == ["a.md"]
    assert _lexical(lexical_kb, "capybara") == []
    assert lexical_kb.store.get_document("c.md") is None
    assert lexical_kb.index(LEXICAL).count() == lexical_kb.store.count_chunks()
    assert index_problems(lexical_kb) == []


def test_same_bytes_at_two_paths_are_two_documents(tmp_path: Path, lexical_kb: KnowledgeBase) -> None:
    docs = tmp_path / "docs"
    _write(docs, {"one.md": "Identical walrus text.\n", "two.md": "Identical walrus text.\n"})
    report = ingest_paths(lexical_kb, [docs])
    assert sorted(report.added) == ["one.md", "two.md"]
    assert _lexical(lexical_kb, "walrus") == ["one.md", "two.md"]
    (docs / "two.md").unlink()
    ingest_paths(lexical_kb, [docs])
    assert _lexical(lexical_kb, "walrus") == ["one.md"]


def test_bad_input_is_reported_and_never_stops_the_ingest(tmp_path: Path, make_kb) -> None:  # type: ignore[no-untyped-def]
    kb = make_kb(indexes__enabled=[LEXICAL], ingest__max_file_bytes=2000)
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES / "bad", docs)
    _write(docs, {"good.md": "# Fine\n\nA perfectly good note about otters.\n", "huge.txt": "word " * 1000})
    os.symlink(docs, docs / "loop")
    report = ingest_paths(kb, [docs])
    reasons = {f.path: f.reason for f in report.failed}
    assert "good.md" in report.added
    assert any("binary" in r for r in reasons.values())
    assert any("empty" in r for r in reasons.values())
    assert "over the limit" in reasons["huge.txt"]
    assert any("loop" in r for r in reasons.values())
    noted = {w.path: w.reason for w in report.warnings}
    assert any("UTF-8" in r for r in noted.values()), noted
    assert _lexical(kb, "otters") == ["good.md"]


def test_unreadable_file_keeps_its_stored_version(
    tmp_path: Path, lexical_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    _write(docs, {"keep.md": "The narwhal has a tusk.\n"})
    ingest_paths(lexical_kb, [docs])
    original = Path.read_bytes

    def deny(self: Path) -> bytes:
        if self.name == "keep.md":
            raise PermissionError(13, "Permission denied")
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", deny)
    report = ingest_paths(lexical_kb, [docs])
    assert [f.path for f in report.failed] == ["keep.md"] and "Permission denied" in report.failed[0].reason
    assert report.removed == []
    assert _lexical(lexical_kb, "narwhal") == ["keep.md"]


def test_a_file_turned_binary_keeps_the_previous_version(tmp_path: Path, lexical_kb: KnowledgeBase) -> None:
    docs = tmp_path / "docs"
    _write(docs, {"n.md": "Pelicans fly low.\n"})
    ingest_paths(lexical_kb, [docs])
    _write(docs, {"n.md": b"\x00\x01\x02binary"})
    report = ingest_paths(lexical_kb, [docs])
    assert [f.path for f in report.failed] == ["n.md"]
    assert _lexical(lexical_kb, "pelicans") == ["n.md"]


def test_single_file_and_collision_between_roots(tmp_path: Path, lexical_kb: KnowledgeBase) -> None:
    _write(tmp_path / "one", {"note.md": "Lemurs leap.\n"})
    _write(tmp_path / "two", {"note.md": "Lions roar.\n"})
    assert ingest_paths(lexical_kb, [tmp_path / "one" / "note.md"]).added == ["note.md"]
    clash = ingest_paths(lexical_kb, [tmp_path / "two"])
    assert clash.added == [] and "another folder" in clash.failed[0].reason
    assert _lexical(lexical_kb, "lemurs") == ["note.md"]


def test_rm_removes_from_store_and_index(tmp_path: Path, lexical_kb: KnowledgeBase) -> None:
    docs = tmp_path / "docs"
    _write(docs, {"x/a.md": "Koalas sleep.\n", "x/b.md": "Koalas climb.\n", "y.md": "Koalas eat.\n"})
    ingest_paths(lexical_kb, [docs])
    assert remove_documents(lexical_kb, ["x/"]) == ["x/a.md", "x/b.md"]
    assert _lexical(lexical_kb, "koalas") == ["y.md"]


def test_interrupted_sync_is_detected_and_completed(tmp_path: Path, lexical_kb: KnowledgeBase) -> None:
    docs = tmp_path / "docs"
    _write(docs, {"a.md": "Otters hold hands.\n"})
    ingest_paths(lexical_kb, [docs])
    _write(docs, {"b.md": "Beavers build dams.\n"})
    Ingester(lexical_kb).ingest_root(docs)  # the store changed, the index did not (a crash here)
    problems = index_problems(lexical_kb)
    assert problems and "behind" in problems[0].message
    assert _lexical(lexical_kb, "beavers") == []
    sync_all(lexical_kb)
    assert _lexical(lexical_kb, "beavers") == ["b.md"]
    assert index_problems(lexical_kb) == []


def test_reindex_rebuilds_from_the_store_of_record_alone(tmp_path: Path, make_kb) -> None:  # type: ignore[no-untyped-def]
    from kb_core.ingest.index_sync import rebuild_index

    kb = make_kb(indexes__enabled=[LEXICAL])
    docs = tmp_path / "docs"
    _write(docs, {f"n{i}.md": f"Note {i} about penguins number {i}.\n" for i in range(20)})
    ingest_paths(kb, [docs])
    shutil.rmtree(docs)  # the source is gone; the store of record is enough
    kb.close()
    shutil.rmtree(kb.directory / "indexes" / LEXICAL)
    reopened = make_kb(indexes__enabled=[LEXICAL])
    result = rebuild_index(reopened, LEXICAL)
    assert result.chunks == 20
    assert len(_lexical(reopened, "penguins")) == 20
