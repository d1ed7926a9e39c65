"""Where documents come from: NFC/NFD names, subfolders of a stored root, moved and copied folders,
and how a run with failures reports them (stderr, exit code 4)."""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import pytest
from kbtest import LEXICAL, TEST_INDEXES_ENV, run_kb, save_answer_row

from kb_core.app import KnowledgeBase
from kb_core.ingest.pipeline import ingest_paths
from kb_core.types import SearchQuery

ENV = TEST_INDEXES_ENV
NFC = unicodedata.normalize("NFC", "café.md")
NFD = unicodedata.normalize("NFD", "café.md")


def _lexical(kb: KnowledgeBase, text: str) -> list[str]:
    return sorted({h.doc_path for h in kb.index(LEXICAL).search(SearchQuery(text=text, k=50, mode="lexical"))})


@pytest.fixture
def kb(make_kb):  # type: ignore[no-untyped-def]
    return make_kb(indexes__enabled=[LEXICAL])


@pytest.mark.slow
def test_nfc_and_nfd_spellings_are_one_document(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / NFC).write_text("Espresso in the composed spelling.\n")
    (docs / NFD).write_text("Espresso in the decomposed spelling.\n")
    env = ENV | {"KB_HOME": str(tmp_path / "k")}
    first = json.loads(run_kb("ingest", str(docs), "--json", env=env).stdout)
    assert first["added"] == [NFC] and "another Unicode form" in first["warnings"][0]["reason"]
    for _ in range(2):  # the same spelling wins every run: nothing flips between them
        again = json.loads(run_kb("ingest", str(docs), "--json", env=env).stdout)
        assert (again["updated"], again["unchanged"]) == ([], 1)
    for spelling in (NFD, NFC):
        shown = run_kb("inspect", spelling, "--json", env=env)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["document"]["path"] == NFC
    assert run_kb("list", "--prefix", unicodedata.normalize("NFD", "caf"), env=env).returncode == 0
    removed = run_kb("rm", NFD, "--json", env=env)
    assert removed.returncode == 0 and json.loads(removed.stdout)["removed"] == [NFC]


def test_a_file_or_folder_inside_a_stored_root_is_not_stored_twice(tmp_path: Path, kb: KnowledgeBase) -> None:
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "top.md").write_text("Moose roam.\n")
    (notes / "sub" / "a.md").write_text("Elk bugle.\n")
    (notes / "sub" / "b.md").write_text("Deer leap.\n")
    ingest_paths(kb, [notes])
    (notes / "sub" / "a.md").write_text("Elk bugle loudly.\n")
    single = ingest_paths(kb, [notes / "sub" / "a.md"])
    assert (single.added, single.updated) == ([], ["sub/a.md"])
    (notes / "sub" / "b.md").unlink()
    folder = ingest_paths(kb, [notes / "sub"])
    assert (folder.added, folder.removed, folder.unchanged) == ([], ["sub/b.md"], 1)
    assert sorted(d.path for d in kb.store.list_documents()) == ["sub/a.md", "top.md"]  # top.md untouched


def test_a_stored_subfolder_is_taken_in_by_its_parent(tmp_path: Path, kb: KnowledgeBase) -> None:
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "a.md").write_text("Top-level walrus.\n")
    (notes / "sub" / "a.md").write_text("Nested narwhal.\n")
    ingest_paths(kb, [notes / "sub"])
    assert [d.path for d in kb.store.list_documents()] == ["a.md"]
    report = ingest_paths(kb, [notes])
    assert report.failed == [] and "now stored under sub/" in report.warnings[0].reason
    assert sorted(d.path for d in kb.store.list_documents()) == ["a.md", "sub/a.md"]
    assert _lexical(kb, "narwhal") == ["sub/a.md"] and _lexical(kb, "walrus") == ["a.md"]
    assert ingest_paths(kb, [notes]).unchanged == 2


@pytest.mark.slow
@pytest.mark.parametrize("how", ["move", "copy"])
def test_a_moved_or_copied_folder_is_re_pointed_keeping_documents_and_answers(tmp_path: Path, how: str) -> None:
    old, new = tmp_path / "notes", tmp_path / "elsewhere" / "notes"
    old.mkdir()
    for i in range(3):
        (old / f"n{i}.md").write_text(f"Heron fact {i}.\n")
    env = ENV | {"KB_HOME": str(tmp_path / "k")}
    assert run_kb("ingest", str(old), env=env).returncode == 0
    from kb_core.storage.store import StoreOfRecord

    store = StoreOfRecord(tmp_path / "k")
    with store.transaction():
        save_answer_row(
            store,
            {
                "answer_id": "a1",
                "created_at": "2026-01-01T00:00:00Z",
                "question": "herons?",
                "answer": "Herons [#1]",
                "grounded": 1,
                "prompt_template_version": "rag-v1-en",
            },
        )
    store.close()
    new.parent.mkdir()
    (shutil.move if how == "move" else shutil.copytree)(old, new)
    refused = run_kb("ingest", str(new), env=env)
    assert refused.returncode == 4 and "came from another folder" in refused.stderr
    command = refused.stderr.split("kb ingest --repoint ")[1].split(")")[0]
    assert command == str(new)
    repointed = run_kb("ingest", "--repoint", command, "--json", env=env)
    assert repointed.returncode == 0, repointed.stderr
    report = json.loads(repointed.stdout)
    assert (report["added"], report["removed"], report["unchanged"], report["documents"]) == ([], [], 3, 3)
    assert "re-pointed 3 document(s)" in report["warnings"][0]["reason"]
    answers = json.loads(run_kb("answers", "list", "--json", env=env).stdout)
    assert [a["answer_id"] for a in answers["answers"]] == ["a1"]
    (new / "n0.md").write_text("Heron fact zero, revised.\n")
    assert json.loads(run_kb("ingest", str(new), "--json", env=env).stdout)["updated"] == ["n0.md"]


@pytest.mark.slow
def test_failures_go_to_stderr_and_exit_4(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("Fine.\n")
    (docs / "bad.md").write_bytes(b"\x00\x01binary")
    env = ENV | {"KB_HOME": str(tmp_path / "k")}
    result = run_kb("ingest", str(docs), env=env)
    assert result.returncode == 4
    assert result.stdout.startswith("added 1,") and len(result.stdout.splitlines()) == 1  # the summary only
    assert "failed: bad.md: binary file" in result.stderr
    (docs / "bad.md").unlink()
    assert run_kb("ingest", str(docs), env=env).returncode == 0
