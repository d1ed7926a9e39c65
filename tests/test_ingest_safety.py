"""Hostile folders: symlinks that leave the root, and nothing stored lost when something cannot be read.

Each test reproduces a problem of issue 7 on real files (the CLI ones with real `kb` subprocesses).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kbtest import LEXICAL, TEST_INDEXES_ENV, run_kb

from kb_core.app import KnowledgeBase
from kb_core.ingest.pipeline import ingest_paths
from kb_core.types import SearchQuery

ENV = TEST_INDEXES_ENV


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


def _lexical(kb: KnowledgeBase, text: str) -> list[str]:
    return sorted({h.doc_path for h in kb.index(LEXICAL).search(SearchQuery(text=text, k=50, mode="lexical"))})


@pytest.fixture
def kb(make_kb):  # type: ignore[no-untyped-def]
    return make_kb(indexes__enabled=[LEXICAL])


@pytest.fixture
def outside_secrets(tmp_path: Path) -> Path:
    """A folder outside the notes holding an owner-only secret, and the notes linking to it."""
    secret = tmp_path / "private"
    _write(secret, {"key.txt": "zebracorn launch code 1234\n"})
    os.chmod(secret / "key.txt", 0o600)
    notes = tmp_path / "notes"
    _write(notes, {"a.md": "# Notes\n\nThe ocelot naps.\n", "in/real.md": "# Real\n\nThe ibis wades.\n"})
    os.symlink(secret / "key.txt", notes / "p.txt")
    os.symlink(secret, notes / "e")
    os.symlink(notes / "in" / "real.md", notes / "inside-link.md")  # stays inside: fine
    return notes


@pytest.mark.slow
def test_links_out_of_the_root_are_skipped_by_default(outside_secrets: Path, tmp_path: Path) -> None:
    env = ENV | {"KB_HOME": str(tmp_path / "k")}
    result = run_kb("ingest", str(outside_secrets), "--json", env=env)
    assert result.returncode == 4, result.stderr  # finished, but some files were skipped
    report = json.loads(result.stdout)
    assert sorted(report["added"]) == ["a.md", "in/real.md", "inside-link.md"]
    reasons = {f["path"]: f["reason"] for f in report["failed"]}
    assert set(reasons) == {"p.txt", "e/"} and all("outside the folder" in r for r in reasons.values())
    assert run_kb("search", "zebracorn", "--mode", "lexical", env=env).returncode == 1
    listing = run_kb("list", env=env).stdout
    assert "zebracorn" not in listing and "key.txt" not in listing


@pytest.mark.slow
def test_follow_symlinks_option_and_setting_follow_them(outside_secrets: Path, tmp_path: Path) -> None:
    env = ENV | {"KB_HOME": str(tmp_path / "k")}
    result = run_kb("ingest", "--follow-symlinks", str(outside_secrets), "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert {"p.txt", "e/key.txt"} <= set(json.loads(result.stdout)["added"])
    assert run_kb("search", "zebracorn", "--mode", "lexical", env=env).returncode == 0
    # back to the default policy: the outside documents are no longer part of the folder
    again = json.loads(run_kb("ingest", str(outside_secrets), "--json", env=env).stdout)
    assert sorted(again["removed"]) == ["e/key.txt", "p.txt"]
    configured = env | {"KB_INGEST__FOLLOW_SYMLINKS": "true"}
    assert json.loads(run_kb("ingest", str(outside_secrets), "--json", env=configured).stdout)["failed"] == []


def test_an_explicit_single_file_link_out_of_its_folder_is_skipped(outside_secrets: Path, kb: KnowledgeBase) -> None:
    report = ingest_paths(kb, [outside_secrets / "p.txt"])
    assert report.added == [] and "outside the folder" in report.failed[0].reason


def test_an_unlistable_subfolder_keeps_its_stored_documents(
    tmp_path: Path, kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    _write(docs, {"top.md": "Gazelles run.\n", "sub/a.md": "Herons fish.\n", "sub/deep/b.md": "Herons nest.\n"})
    ingest_paths(kb, [docs])
    real_scandir = os.scandir

    def denied(path):  # type: ignore[no-untyped-def]  # permission denied, also for root
        if Path(path).name == "sub":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", denied)
    report = ingest_paths(kb, [docs])
    assert [(f.path, "Permission denied" in f.reason) for f in report.failed] == [("sub/", True)]
    assert report.removed == []
    assert _lexical(kb, "herons") == ["sub/a.md", "sub/deep/b.md"]


def test_an_unreadable_root_keeps_everything(
    tmp_path: Path, kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    _write(docs, {"a.md": "Tapirs swim.\n"})
    ingest_paths(kb, [docs])
    monkeypatch.setattr(os, "scandir", lambda path: (_ for _ in ()).throw(PermissionError(13, "Permission denied")))
    report = ingest_paths(kb, [docs])
    assert report.removed == [] and report.failed[0].path == "."
    assert _lexical(kb, "tapirs") == ["a.md"]


@pytest.mark.parametrize("kind", ["broken", "loop"])
def test_a_stored_file_replaced_by_a_bad_link_is_kept(tmp_path: Path, kb: KnowledgeBase, kind: str) -> None:
    docs = tmp_path / "docs"
    _write(docs, {"n.md": "Quokkas smile.\n", "other.md": "Wombats dig.\n"})
    ingest_paths(kb, [docs])
    (docs / "n.md").unlink()
    os.symlink(docs / ("missing.md" if kind == "broken" else "n.md"), docs / "n.md")
    report = ingest_paths(kb, [docs])
    assert report.removed == []
    assert [f.path for f in report.failed] == ["n.md"] and kind in report.failed[0].reason
    assert _lexical(kb, "quokkas") == ["n.md"]


def test_a_stored_file_turned_invalid_utf8_keeps_the_good_version(tmp_path: Path, kb: KnowledgeBase) -> None:
    docs = tmp_path / "docs"
    _write(docs, {"n.md": "Flamingos stand on one leg.\n"})
    ingest_paths(kb, [docs])
    _write(docs, {"n.md": b"Flamingos \xff\xfe broke the encoding.\n"})
    report = ingest_paths(kb, [docs])
    assert report.updated == [] and "earlier version is kept" in report.failed[0].reason
    assert [c.text for c in kb.store.chunks_of(["n.md"])] == ["Flamingos stand on one leg."]
    # a new file with a few bad bytes is still stored (with replacement characters and a warning)
    _write(docs, {"new.md": b"Okapis \xff hide.\n"})
    assert ingest_paths(kb, [docs]).added == ["new.md"]


def test_a_file_that_vanishes_mid_run_keeps_its_stored_version(
    tmp_path: Path, kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    _write(docs, {"a.md": "Lynxes stalk.\n", "b.md": "Bison graze.\n"})
    ingest_paths(kb, [docs])
    _write(docs, {"a.md": "Lynxes stalk quietly.\n"})
    original = Path.read_bytes

    def vanish(self: Path) -> bytes:
        if self.name == "a.md":
            self.unlink()  # gone between the walk and the read
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", vanish)
    report = ingest_paths(kb, [docs])
    assert report.removed == [] and "No such file" in report.failed[0].reason
    assert _lexical(kb, "lynxes") == ["a.md"]
    monkeypatch.undo()
    assert ingest_paths(kb, [docs]).removed == ["a.md"]  # the next run sees it is really gone


def test_a_document_the_chunker_fails_on_is_that_files_failure_only(
    tmp_path: Path, kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks the chunker cannot take (a third party's parser may give any) fail their file, not the ingest: the
    rest of the batch is stored and the file is reported with the chunker's reason."""
    from kb_core.ingest.chunker import Chunker

    chunk_many = Chunker.chunk_many

    def failing(self: Chunker, documents: list[tuple[str, list[object]]]) -> list[object]:
        if any(path.endswith("bad.md") for path, _ in documents):
            raise ValueError("a block the chunker cannot take")
        return chunk_many(self, documents)  # type: ignore[arg-type]

    monkeypatch.setattr(Chunker, "chunk_many", failing)
    folder = tmp_path / "notes"
    folder.mkdir()
    for name in ("a.md", "bad.md", "c.md"):
        (folder / name).write_text(f"# {name}\n\nSome text about {name}.\n")
    report = ingest_paths(kb, [folder])
    assert sorted(d.path for d in kb.store.list_documents()) == ["a.md", "c.md"]
    assert [(w.path, "chunker failed: ValueError" in w.reason) for w in report.failed] == [("bad.md", True)]
