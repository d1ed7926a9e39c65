"""An upload into a folder whose ``.kbignore`` holds a line kb cannot use (issue 42): it was a 500
(pathspec's ``GitIgnorePatternError``); now the line is skipped, named in the report, and the file stored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

NOTE = b"# Hostile\n\nThe uploads folder's ignore file cannot refuse the wombat.\n"


def test_an_upload_into_a_folder_with_a_hostile_kbignore_is_stored(start_server: Callable[..., Any]) -> None:
    server = start_server()
    uploads = server.kb_dir / "uploads"
    uploads.mkdir()
    (uploads / ".kbignore").write_text("!\ndrafts/\n\\\n[z-a]\n", encoding="utf-8")
    with server.client() as http:
        reply = http.post("/documents", files={"file": ("notes/wombat.md", NOTE)})
        assert reply.status_code == 200, reply.text
        report = reply.json()
        assert (report["added"], report["failed"]) == (["notes/wombat.md"], [])
        named = [(w["path"], w["reason"].split(":")[0]) for w in report["warnings"]]
        assert named == [(".kbignore", "line 1 '!'"), (".kbignore", "line 3 '\\\\'"), (".kbignore", "line 4 '[z-a]'")]
        drafted = http.post("/documents", files={"file": ("drafts/d.md", NOTE)})  # refused for its own reason
        assert drafted.status_code == 400 and "(rule 'drafts/' of .kbignore)" in drafted.json()["error"]
        again = http.post("/documents", files={"file": ("notes/wombat.md", NOTE + b"More.\n")})
        assert again.status_code == 200 and again.json()["updated"] == ["notes/wombat.md"]
        assert "wombat" in http.get("/search", params={"q": "wombat"}).text
