"""The names a front end may write a new file under (kb serve's uploads, kb mcp's inbox): refused before
anything is written, with the kind of refusal (bad name, no parser, ignored by ingest, clash on disk)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core.commands import NameRefused, check_new_file, clash_between, clean_name
from kb_core.ingest.names import ignore_rule
from kb_core.ingest.source import ignored_part

EXTENSIONS = (".md", ".txt")


def refusal(folder: Path, name: str, ignores: tuple[str, ...] = ()) -> NameRefused:
    with pytest.raises(NameRefused) as caught:
        check_new_file(folder, name, EXTENSIONS, ignores)
    assert "\n" not in str(caught.value)
    return caught.value


def test_a_file_where_a_folder_is_needed_and_the_reverse_are_clashes(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n")
    (tmp_path / "dir.md").mkdir()
    (tmp_path / "dir.md" / "y.md").write_text("# Y\n")
    (tmp_path / "link").symlink_to(tmp_path / "dir.md")
    cases = {
        "a.md/b.md": "'a.md' is a document, not a folder",
        "a.md/deeper/b.md": "'a.md' is a document, not a folder",
        "dir.md": "'dir.md' is a folder",
        "dir.md/y.md/z.md": "'dir.md/y.md' is a document, not a folder",
        "link/y.md": "'link' is a symbolic link",
    }
    for name, why in cases.items():
        refused = refusal(tmp_path, name)
        assert (refused.kind, refused.message) == ("clash", f"cannot store {name!r}: {why}")
    assert check_new_file(tmp_path, "a.md", EXTENSIONS) == "a.md"  # replacing a file is fine
    assert check_new_file(tmp_path, "dir.md/new/n.md", EXTENSIONS) == "dir.md/new/n.md"


def test_a_name_ingest_would_skip_is_refused_naming_the_rule_and_where_it_comes_from(tmp_path: Path) -> None:
    (tmp_path / ".kbignore").write_text("# drafts stay out\n\ndrafts/\n*.tmp.md\n", encoding="utf-8")
    cases = {
        "node_modules/z.md": ("node_modules/", "node_modules/", "kb's defaults"),
        "a/.git/h.md": ("a/.git/", ".git/", "kb's defaults"),
        "backup.md~": None,  # no parser reads it: refused as such first
        "private/p.md": ("private/", "private/", "[ingest] ignore"),
        "drafts/d.md": ("drafts/", "drafts/", ".kbignore"),
        "x.tmp.md": ("x.tmp.md", "*.tmp.md", ".kbignore"),
    }
    for name, expected in cases.items():
        refused = refusal(tmp_path, name, ("private/",))
        if expected is None:
            assert refused.kind == "no_parser"
            continue
        part, rule, origin = expected
        assert refused.kind == "ignored", refused
        assert refused.message == (
            f"the name {name!r} would not be stored: the ingest ignore rules skip {part!r} (rule {rule!r} of {origin})"
        )


def test_parts_are_limited_in_bytes_as_file_systems_count_them(tmp_path: Path) -> None:
    assert clean_name("é" * 124 + ".md", EXTENSIONS)  # 251 bytes
    for name in ("é" * 127 + ".md", "d" * 256 + "/a.md", "a/" * 600 + "b.md"):
        with pytest.raises(NameRefused) as caught:
            clean_name(name, EXTENSIONS)
        assert caught.value.kind == "invalid"
    with pytest.raises(NameRefused) as caught:
        clean_name("a.exe", EXTENSIONS)
    assert caught.value.kind == "no_parser" and caught.value.message == "no parser for 'a.exe': none reads .exe"


def test_names_written_together_must_not_clash_with_each_other() -> None:
    assert clash_between(["a.md", "b/a.md", "b/c.md"]) is None
    assert clash_between(["a.md", "a.md/b.md"]) == (
        "cannot store 'a.md/b.md': 'a.md' is a document of the same request, not a folder"
    )


@given(st.lists(st.sampled_from(["a", "node_modules", ".git", "drafts", "x~", "b.md", "__pycache__"]), min_size=1))
def test_the_rule_found_is_the_one_the_ingest_walk_applies(parts: list[str]) -> None:
    folder = Path("/nonexistent/kb/uploads")
    name = "/".join(parts)
    found = ignore_rule(folder, name, ["drafts/"])
    assert (found[0] if found else None) == ignored_part(folder, name, ["drafts/"])
