"""The ``answers`` tool: stored answers and whether their citations still hold after the notes changed."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

import kb_core
from kb_core.testing import ScriptedPlugin, TestIndexesPlugin, extractive, load_registry
from kb_mcp.tools import KbTools

NOTE = "# Heliograph\n\nThe daemon listens on port 8080 and logs to syslog.\n"


def _schema(name: str) -> dict:
    import json
    from importlib import resources

    return json.loads(resources.files("kb_core").joinpath("schemas", f"{name}.json").read_text(encoding="utf-8"))


def test_a_stale_answer_is_listed_and_shown_with_both_wordings(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "h.md").write_text(NOTE)
    registry = load_registry(extra_plugins=[("indexes", TestIndexesPlugin()), ("llm", ScriptedPlugin(extractive))])
    overrides = {"indexes.enabled": ["test-lexical"], "search.mode": "lexical", "models.llm.backend": "scripted"}
    config = kb_core.load_config(kb_dir=tmp_path / "kb", overrides=overrides, environ={})
    with kb_core.KnowledgeBase(config, registry) as kb:
        kb_core.ingest_paths(kb, [notes])
        tools = KbTools(kb)
        answer = tools.ask("Which port does the daemon listen on?").payload
        assert answer["grounded"]
        answer_id = answer["answer_id"]
        listed = tools.answers().envelope()
        jsonschema.validate(listed, _schema("answer_history.v1"))
        assert [(a["answer_id"], a["state"]) for a in listed["answers"]] == [(answer_id, "valid")]
        assert tools.answers(stale=True).envelope()["total"] == 0

        (notes / "h.md").write_text(NOTE.replace("8080", "9090"))
        kb_core.ingest_paths(kb, [notes])
        stale = tools.answers(stale=True).envelope()
        assert [a["answer_id"] for a in stale["answers"]] == [answer_id]
        shown = tools.answers(answer_id).envelope()
        jsonschema.validate(shown, _schema("stored_answer.v1"))
        (citation,) = shown["citations"]
        assert (shown["state"], citation["reason"]) == ("stale", "changed")
        assert "8080" in citation["cited_text"] and "9090" in citation["now_text"]
        with pytest.raises(kb_core.NotFoundError):
            tools.answers("ans_0000000000000000")
