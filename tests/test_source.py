"""The filesystem source: ignores, symlink loops, relative NFC paths."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from kb_core.ingest.source import SourceFile, SourceProblem, walk


def _paths(root: Path, **kwargs: object) -> tuple[list[str], list[SourceProblem]]:
    items = list(walk(root, [".md", ".txt"], **kwargs))  # type: ignore[arg-type]
    return sorted(i.path for i in items if isinstance(i, SourceFile)), [
        i for i in items if isinstance(i, SourceProblem)
    ]


def test_recursive_walk_with_default_and_kbignore_patterns(tmp_path: Path) -> None:
    for rel in [
        "a.md",
        "sub/b.txt",
        "sub/deep/c.md",
        ".git/config.md",
        "node_modules/x.md",
        "drafts/d.md",
        "skip.log",
        "sub/private.md",
    ]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("text")
    (tmp_path / ".kbignore").write_text("drafts/\nsub/private.md\n")
    paths, problems = _paths(tmp_path)
    assert paths == ["a.md", "sub/b.txt", "sub/deep/c.md"]
    assert problems == []


def test_extra_ignore_patterns_from_config(tmp_path: Path) -> None:
    (tmp_path / "keep.md").write_text("x")
    (tmp_path / "tmp-notes.md").write_text("x")
    paths, _ = _paths(tmp_path, extra_ignores=["tmp-*"])
    assert paths == ["keep.md"]


def test_symlink_loops_are_reported_not_followed_forever(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "note.md").write_text("x")
    os.symlink(tmp_path / "a", tmp_path / "a" / "loop")
    os.symlink(tmp_path, tmp_path / "a" / "up")
    paths, problems = _paths(tmp_path)
    assert paths == ["a/note.md"]
    assert problems and all("loop" in p.reason for p in problems)


def test_broken_symlink_is_reported(tmp_path: Path) -> None:
    os.symlink(tmp_path / "missing.md", tmp_path / "dangling.md")
    paths, problems = _paths(tmp_path)
    assert paths == []
    assert [p.path for p in problems] == ["dangling.md"]


def test_paths_are_nfc_normalised(tmp_path: Path) -> None:
    decomposed = unicodedata.normalize("NFD", "한글노트.md")
    (tmp_path / decomposed).write_text("x")
    paths, _ = _paths(tmp_path)
    assert paths == [unicodedata.normalize("NFC", "한글노트.md")]
    assert paths[0] != decomposed


def test_skip_dirs_excludes_the_knowledge_base_itself(tmp_path: Path) -> None:
    (tmp_path / "note.md").write_text("x")
    (tmp_path / ".kb").mkdir()
    (tmp_path / ".kb" / "inside.md").write_text("x")
    paths, _ = _paths(tmp_path, skip_dirs=[tmp_path / ".kb"])
    assert paths == ["note.md"]


@pytest.mark.parametrize(
    ("name", "skipped"),
    [(".git/h.md", ".git/"), ("a/node_modules/b/c.md", "a/node_modules/"), ("private/x.md", "private/"), ("a.md", None)]
    + [("notes/.hg/x.md", "notes/.hg/"), ("mine.md", None), ("draft.md", "draft.md")],
)
def test_ignored_part_says_what_the_walk_skips(tmp_path: Path, name: str, skipped: str | None) -> None:
    from kb_core.ingest.source import ignored_part

    (tmp_path / ".kbignore").write_text("private/\n", encoding="utf-8")
    assert ignored_part(tmp_path, name, ["draft.md"]) == skipped
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text("# x\n", encoding="utf-8")
    walked = {f.path for f in walk(tmp_path, [".md"], ["draft.md"]) if isinstance(f, SourceFile)}
    assert (name in walked) is (skipped is None)
