"""Names for text sent over MCP (untrusted input), and the inbox's promise that a refused text changes nothing."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_helpers import write_notes

import kb_core
from kb_core.commands import clean_name as check_name
from kb_mcp.tools import KbTools

EXTENSIONS = {".md", ".txt"}


@given(st.text(max_size=300))
def test_any_accepted_name_stays_inside_the_inbox(name: str) -> None:
    try:
        clean = check_name(name, EXTENSIONS)
    except kb_core.KbError as exc:
        assert "\n" not in str(exc) and exc.message  # one line, says why
        return
    inbox = Path("/kb/inbox")
    target = (inbox / clean).resolve()
    assert inbox in target.parents
    assert PurePosixPath(clean).suffix.lower() in EXTENSIONS
    assert not any(part in ("", ".", "..") for part in clean.split("/"))
    assert len(clean) <= kb_core.LIMITS.path_chars
    assert all(len(p) <= kb_core.LIMITS.path_part_chars and len(p.encode()) <= 255 for p in clean.split("/"))
    assert not any(
        unicodedata.category(c) in {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"} for c in clean.replace("\u200d", "")
    )


@given(st.lists(st.sampled_from(["a", "b", "..", ".", "", "ü", "x y"]), min_size=1, max_size=5))
def test_dot_parts_are_refused(parts: list[str]) -> None:
    name = "/".join(parts) + ".md"
    if any(p in ("", ".", "..") for p in name.strip().split("/")):
        with pytest.raises(kb_core.KbError):
            check_name(name, EXTENSIONS)
    elif parts[-1] not in ("", ".", ".."):  # a plain last part: a file name with its extension
        assert check_name(name, EXTENSIONS) == name.strip()


@pytest.mark.parametrize(
    "name",
    ["/etc/passwd.md", "a\\b.md", "a\nb.md", "x.pdf", "", "   ", "a/../../b.md", "evil\u202egpj.md", "a\x00.md"]
    + ["\ud800.md", "zero\u200bwidth.md", f"{'d' * 256}.md", f"{'é' * 130}.md", "a/" * 600 + "b.md"],
)
def test_bad_names(name: str) -> None:
    with pytest.raises(kb_core.KbError):
        check_name(name, EXTENSIONS)


@pytest.mark.slow  # loads the real default embedder
def test_a_refused_text_leaves_the_stored_document_and_its_file(tmp_path: Path) -> None:
    notes = write_notes(tmp_path / "notes", {"shared.md": "# Shared\n\nFrom the notes folder.\n"})
    with kb_core.open_kb(kb_dir=tmp_path / "kb", overrides={}) as kb:
        kb_core.ingest_paths(kb, [notes])
        tools = KbTools(kb)
        tools.ingest(text="# Mine\n\nFirst version.\n", name="mine.md")
        with pytest.raises(kb_core.KbError, match="came from another folder"):
            tools.ingest(text="# Clash\n\nSame path as a note.\n", name="shared.md")
        assert not (tools.inbox.folder / "shared.md").exists()
        assert tools.fetch("shared.md").text == "# Shared\n\nFrom the notes folder.\n"
        with pytest.raises(kb_core.KbError, match="the text is empty"):
            tools.ingest(text="\n\n", name="mine.md")
        assert (tools.inbox.folder / "mine.md").read_text() == "# Mine\n\nFirst version.\n"
        assert tools.fetch("mine.md#L3-L3").text == "First version."


@pytest.mark.slow  # loads the real default embedder
def test_the_report_names_the_inbox_relative_to_the_knowledge_base(tmp_path: Path) -> None:
    notes = write_notes(tmp_path / "notes", {"shared.md": "# Shared\n\nFrom the notes folder.\n"})
    with kb_core.open_kb(kb_dir=tmp_path / "kb", overrides={}) as kb:
        kb_core.ingest_paths(kb, [notes])
        tools = KbTools(kb)
        reply = tools.ingest(text="# Memo\n\nThe heron fishes at dawn.\n", name="memos/heron.md").envelope()
        assert reply["roots"] == ["inbox"] and reply["added"] == ["memos/heron.md"]
        assert str(tmp_path) not in json.dumps(reply)  # no absolute path of the server's disk
        with pytest.raises(kb_core.KbError) as refused:  # a failure's reason names the inbox the same way
            tools.ingest(text="# Clash\n\nSame path as a note.\n", name="shared.md")
        assert str(tools.inbox.folder) not in str(refused.value)


@pytest.mark.slow  # loads the real default embedder
def test_names_that_clash_or_are_ignored_say_so_and_write_nothing(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[ingest]\nignore = ["private/"]\n', encoding="utf-8")
    with kb_core.open_kb(kb_dir=tmp_path / "kb", overrides={}, config_path=tmp_path / "config.toml") as kb:
        tools = KbTools(kb)
        tools.ingest(text="# Y\n\nIn a folder named like a document.\n", name="dir.md/y.md")
        before = sorted(p.relative_to(tools.inbox.folder).as_posix() for p in tools.inbox.folder.rglob("*"))
        cases = {
            "dir.md": "cannot store 'dir.md': 'dir.md' is a folder",
            "dir.md/y.md/z.md": "cannot store 'dir.md/y.md/z.md': 'dir.md/y.md' is a document, not a folder",
            "node_modules/z.md": "skip 'node_modules/' (rule 'node_modules/' of kb's defaults)",
            "a/private/z.md": "skip 'a/private/' (rule 'private/' of [ingest] ignore)",
            f"{'é' * 128}.md": "(259 bytes) long, over 255 characters or 255 bytes",
        }
        for name, fragment in cases.items():
            with pytest.raises(kb_core.KbError) as refused:
                tools.ingest(text="# Z\n\nRefused.\n", name=name)
            assert fragment in refused.value.message
        assert sorted(p.relative_to(tools.inbox.folder).as_posix() for p in tools.inbox.folder.rglob("*")) == before
        assert [d.path for d in kb.store.list_documents()] == ["dir.md/y.md"]
