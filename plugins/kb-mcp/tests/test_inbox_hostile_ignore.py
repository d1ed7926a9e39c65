"""Text sent over MCP into an inbox whose ``.kbignore`` holds a line kb cannot use (issue 42): it was an
internal error (pathspec's ``GitIgnorePatternError``); now the line is skipped and named, the text stored."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import kb_core
from kb_mcp.tools import KbTools


def test_the_inbox_stores_text_whatever_its_kbignore_holds(make_test_kb: Callable[..., kb_core.KnowledgeBase]) -> None:
    kb = make_test_kb()
    tools = KbTools(kb)
    inbox: Path = tools.inbox.folder
    inbox.mkdir(parents=True)
    (inbox / ".kbignore").write_text("!\nprivate/\n\\\n", encoding="utf-8")
    reply = tools.ingest(text="# Heron\n\nThe heron fishes at dawn.\n", name="memos/heron.md").envelope()
    assert (reply["added"], reply["failed"]) == (["memos/heron.md"], [])
    assert [(w["path"], w["reason"].split(":")[0]) for w in reply["warnings"]] == [
        (".kbignore", "line 1 '!'"),
        (".kbignore", "line 3 '\\\\'"),
    ]
    with pytest.raises(kb_core.KbError, match="rule 'private/' of .kbignore"):  # the usable rules still hold
        tools.ingest(text="# Secret\n\nNot for the inbox.\n", name="private/s.md")
    assert [d.path for d in kb.store.list_documents()] == ["memos/heron.md"]
