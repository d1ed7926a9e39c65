"""A watched folder's ``.kbignore`` cannot stop ``kb watch`` (issue 42): a line ``!`` or a lone ``\\`` made
it exit 70 before its first update. Each such line is one warning, given again only when the file is saved."""

from __future__ import annotations

from pathlib import Path

import pytest
from watch_helpers import WatchProcess, listed

pytestmark = pytest.mark.slow

BANG = "line 1 '!': a '!' with nothing to un-ignore (write '\\!' for a name that starts with '!'); the rule is skipped"
BACKSLASH = "line 3 '\\\\': ends with a '\\' that escapes nothing (write '\\\\' for a backslash); the rule is skipped"


def test_a_hostile_kbignore_is_one_warning_and_watching_goes_on(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "drafts").mkdir(parents=True)
    (notes / "alpha.md").write_text("# Alpha\n\nThe aardvark eats ants at dawn.\n", encoding="utf-8")
    (notes / "drafts" / "d.md").write_text("# Draft\n\nNot yet.\n", encoding="utf-8")
    (notes / ".kbignore").write_text("!\ndrafts/\n\\\n", encoding="utf-8")
    watch = WatchProcess(tmp_path / "kb", notes)
    try:
        first = watch.event()
        assert (first["kind"], first["trigger"], first["added"], first["failed"]) == (
            "update",
            "initial",
            ["alpha.md"],
            [],
        )
        assert [(w["path"], w["reason"]) for w in first["warnings"]] == [(".kbignore", BANG), (".kbignore", BACKSLASH)]

        (notes / "beta.md").write_text("# Beta\n\nThe bee makes honey.\n", encoding="utf-8")
        second = watch.event()
        assert (second["added"], second["warnings"]) == (["beta.md"], [])  # not the same warnings every update

        (notes / ".kbignore").write_text("!\n", encoding="utf-8")  # saved again: said again; drafts/ is read now
        added: list[str] = []
        warned: list[tuple[str, str]] = []
        while not (added and warned):  # one update, or two when the save is seen in two batches
            third = watch.event()
            added += third["added"]
            warned += [(w["path"], w["reason"]) for w in third["warnings"]]
        assert (added, warned) == (["drafts/d.md"], [(".kbignore", BANG)])
        assert listed(tmp_path / "kb") == ["alpha.md", "beta.md", "drafts/d.md"]
        assert watch.process.poll() is None
    finally:
        watch.close()
