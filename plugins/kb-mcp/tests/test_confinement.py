"""What ``ingest`` and ``fetch`` may read: paths inside the allowed folders only, and stored documents' files only."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import attrs
import pytest
from mcp_helpers import write_notes

import kb_core
from kb_core.commands import error_line
from kb_mcp.folders import IngestFolders, configured_folders
from kb_mcp.tools import KbTools


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """``notes/`` (allowed) with links out of it, and its neighbours ``notes-evil/`` and ``secret/``."""
    write_notes(tmp_path / "notes", {"a.md": "# A\n", "sub/b.md": "# B\n"})
    write_notes(tmp_path / "notes-evil", {"x.md": "# X\n"})
    write_notes(tmp_path / "secret", {"s.md": "# S\n"})
    (tmp_path / "notes" / "out").symlink_to(tmp_path / "secret", target_is_directory=True)
    (tmp_path / "notes" / "inside").symlink_to(tmp_path / "notes" / "sub", target_is_directory=True)
    (tmp_path / "link-to-notes").symlink_to(tmp_path / "notes", target_is_directory=True)
    return tmp_path


def test_paths_inside_an_allowed_folder_are_resolved(layout: Path) -> None:
    allowed = IngestFolders.of([layout / "link-to-notes"])  # the folder itself given through a link
    notes = (layout / "notes").resolve()
    assert allowed.folders == (notes,)
    assert allowed.check(str(layout / "notes")) == notes
    assert allowed.check(str(layout / "notes" / "sub" / "b.md")) == notes / "sub" / "b.md"
    assert allowed.check(str(layout / "notes" / "inside")) == notes / "sub"
    assert allowed.check(str(layout / "notes" / "missing.md")) == notes / "missing.md"  # ingest then says so


@pytest.mark.parametrize(
    "path",
    ["notes-evil", "notes-evil/x.md", "notes/../secret", "notes/out", "notes/out/s.md", "secret/none.md", ".", "/"],
)
def test_paths_outside_are_refused_with_how_to_allow_them(layout: Path, path: str) -> None:
    allowed = IngestFolders.of([layout / "notes"])
    with pytest.raises(kb_core.KbError) as caught:
        allowed.check(str(layout / path))
    line = error_line(caught.value)
    assert "is outside the folders kb mcp may ingest" in line and "--ingest-folder DIR" in line
    assert "\n" not in line


@pytest.mark.parametrize("path", ["", "   ", "/tmp/a\x00b", "a" * 5000])
def test_unusable_paths_are_refused(layout: Path, path: str) -> None:
    with pytest.raises(kb_core.KbError):
        IngestFolders.of([layout / "notes"]).check(path)


def test_no_folder_is_allowed_by_default(layout: Path) -> None:
    with pytest.raises(kb_core.KbError, match="no folder is allowed") as caught:
        IngestFolders().check(str(layout / "notes"))
    assert "send text with a name instead" in caught.value.hint


def test_configured_folders(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def config(value: object) -> kb_core.Config:
        return kb_core.Config(backends={"mcp": {"ingest_folders": value}})

    monkeypatch.setenv("HOME", str(tmp_path))
    assert configured_folders(kb_core.Config()) == []
    assert configured_folders(config(["~/notes", "/srv/docs"])) == [tmp_path / "notes", Path("/srv/docs")]
    for bad, message in (
        (["notes"], "an absolute folder"),
        ("~/notes", "is not a list of text"),
        ([3], "is not a list of text"),
    ):
        with pytest.raises(kb_core.ConfigError, match=message):
            configured_folders(config(bad))


@pytest.mark.slow  # loads the real default embedder
def test_fetch_reads_only_a_stored_documents_unchanged_file(tmp_path: Path) -> None:
    notes = write_notes(tmp_path / "notes", {"a.md": "# A\n\nThe avocet wades.\n", "b.md": "# B\n\nThe bittern.\n"})
    with kb_core.open_kb(kb_dir=tmp_path / "kb", overrides={}) as kb:
        kb_core.ingest_paths(kb, [notes])
        tools = KbTools(kb)
        (notes / "a.md").unlink()
        os.mkfifo(notes / "a.md")  # a pipe nobody writes to: reading it would block the server
        (notes / "b.md").unlink()
        (notes / "b.md").symlink_to("/etc/passwd")
        got: dict[str, str] = {}
        worker = threading.Thread(target=lambda: got.update(a=tools.fetch("a.md").text or ""), daemon=True)
        worker.start()
        worker.join(timeout=20)
        assert got == {"a": "# A\n\nThe avocet wades."}  # rebuilt from the stored chunks, without blocking
        fetched = tools.fetch("b.md")
        assert (fetched.text, fetched.payload["source"]) == ("# B\n\nThe bittern.", "chunks")
        for target in ("/etc/passwd", "../../etc/passwd", "/etc/passwd#L1-L2", str(notes / "b.md")):
            with pytest.raises(kb_core.NotFoundError):
                tools.fetch(target)


@pytest.mark.slow  # loads the real default embedder
def test_fetch_gives_a_csv_its_file_and_a_binary_file_the_text_kb_parsed_from_it(tmp_path: Path) -> None:
    notes = write_notes(tmp_path / "notes", {"t.csv": "Year,Sales\n2023,7\n2024,9\n"})
    with kb_core.open_kb(kb_dir=tmp_path / "kb", overrides={}) as kb:
        kb_core.ingest_paths(kb, [notes])
        tools = KbTools(kb)
        fetched = tools.fetch("t.csv")  # a CSV is read by a text parser: its lines are the file's
        assert (fetched.text, fetched.payload["source"]) == ("Year,Sales\n2023,7\n2024,9\n", "file")
        document = kb.store.get_document("t.csv")
        assert document is not None and document.parser == "csv"
        with kb.store.transaction():  # the stored document is now a PDF's, parsed to these rows
            kb.store.replace_document(attrs.evolve(document, parser="pdf"), kb.store.chunks_of(["t.csv"]))
        fetched = tools.fetch("t.csv")  # its file is unchanged and decodes, but is not what kb cites
        assert (fetched.text, fetched.payload["source"]) == ("Year | Sales\n2023 | 7\n2024 | 9", "chunks")
        fetched = tools.fetch("t.csv#L2-L3")
        assert (fetched.text, fetched.payload["source"]) == ("2023 | 7\n2024 | 9", "chunks")
        binary = (notes / "t.csv").read_bytes().replace(b"Year", b"Ye\x00r")  # what a PDF or a scan's file is like
        (notes / "t.csv").write_bytes(binary)
        with kb.store.transaction():
            kb.store.replace_document(
                attrs.evolve(document, parser="pdf", content_hash=hashlib.sha256(binary).hexdigest()),
                kb.store.chunks_of(["t.csv"]),
            )
        fetched = tools.fetch("t.csv")
        assert (fetched.text, fetched.payload["source"]) == ("Year | Sales\n2023 | 7\n2024 | 9", "chunks")
