"""``ask`` in threads of follow-up questions, and the ``threads`` tool: in process over ``KbTools``, and
end to end through a real ``kb mcp`` with the test-only scripted backend."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from kb_mcp_test_backend import TOPIC
from mcp import ClientSession
from mcp.types import CallToolResult
from mcp_helpers import answer_part, schema, text_of, with_server

import kb_core
from kb_core.testing import ScriptedPlugin, TestIndexesPlugin, following_up, load_registry
from kb_mcp.tools import THREAD_ID_CHARS, KbTools

NOTE = "# Heliograph\n\nThe Heliograph daemon listens on port 8080 and logs to syslog.\n"
DAEMON = "the Heliograph daemon"
UNKNOWN = "thr_000000000000"


#: The topic when asked what a follow-up is about; else the first evidence entry, cited.
conversing = following_up(DAEMON)


def checked(data: dict[str, Any]) -> dict[str, Any]:
    """An ``ask`` result, valid as ``ask.v1`` and holding a valid ``answer.v1`` (today's fields, kept)."""
    assert data["schema_version"] == "ask.v1"
    jsonschema.validate(data, schema("ask.v1"))
    jsonschema.validate(answer_part(data), schema("answer.v1"))
    return data


@pytest.fixture
def tools(tmp_path: Path) -> Iterator[KbTools]:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "h.md").write_text(NOTE)
    registry = load_registry(extra_plugins=[("indexes", TestIndexesPlugin()), ("llm", ScriptedPlugin(conversing))])
    overrides = {"indexes.enabled": ["test-lexical"], "search.mode": "lexical", "models.llm.backend": "scripted"}
    config = kb_core.load_config(kb_dir=tmp_path / "kb", overrides=overrides, environ={})
    with kb_core.KnowledgeBase(config, registry) as kb:
        kb_core.ingest_paths(kb, [notes])
        yield KbTools(kb)


def test_a_follow_up_goes_on_with_the_thread_and_says_what_kb_searched(tools: KbTools) -> None:
    first = checked(tools.ask("What does the Heliograph daemon log to?").envelope())
    assert first["thread_id"].startswith("thr_")
    assert (first["position"], first["method"]) == (1, "as_asked")
    assert first["standalone"] == first["asked"] == first["question"] == "What does the Heliograph daemon log to?"
    assert first["grounded"] and "syslog" in first["answer"]

    follow = checked(tools.ask("Which port does it listen on?", thread_id=f" {first['thread_id']} ").envelope())
    assert (follow["thread_id"], follow["position"], follow["method"]) == (first["thread_id"], 2, "model")
    assert follow["asked"] == "Which port does it listen on?"
    assert follow["standalone"] == follow["question"] == f"Which port does it listen on? ({DAEMON})"
    assert follow["grounded"] and "8080" in follow["answer"]

    other = checked(tools.ask("Which port does the Heliograph daemon listen on?").envelope())
    assert other["thread_id"] != first["thread_id"] and other["position"] == 1  # no id: a new thread

    listed = tools.threads().envelope()
    jsonschema.validate(listed, schema("thread_list.v1"))
    assert [(t["thread_id"], t["turns"]) for t in listed["threads"]] == [
        (other["thread_id"], 1),
        (first["thread_id"], 2),
    ]
    assert [t["thread_id"] for t in tools.threads(limit=1).envelope()["threads"]] == [other["thread_id"]]
    shown = tools.threads(first["thread_id"]).envelope()
    jsonschema.validate(shown, schema("thread.v1"))
    assert [t["standalone"] for t in shown["turns"]] == [first["standalone"], follow["standalone"]]


def test_a_thread_id_that_is_unknown_empty_or_too_long_is_refused_before_anything_is_asked(tools: KbTools) -> None:
    with pytest.raises(kb_core.NotFoundError) as unknown:
        tools.ask("Which port does it listen on?", thread_id=UNKNOWN)
    assert unknown.value.message == f"no thread with id {UNKNOWN!r}"
    assert "leave it out to start a new thread" in (unknown.value.hint or "")
    with pytest.raises(kb_core.KbError, match="the thread_id is 100 characters long; at most 64"):
        tools.ask("Which port does it listen on?", thread_id="t" * 100)
    with pytest.raises(kb_core.KbError, match="the thread_id is empty"):
        tools.ask("Which port does it listen on?", thread_id="  ")
    with pytest.raises(kb_core.NotFoundError):
        tools.threads(UNKNOWN)
    assert tools.threads().envelope()["threads"] == []  # nothing was asked, no thread was started
    assert tools.answers().envelope()["total"] == 0


def test_the_ask_schema_is_answer_v1_with_the_turn_fields() -> None:
    """ask.v1 (shipped by kb-mcp) must follow answer.v1 and turn.v1 (shipped by kb_core) when they change."""
    ask, answer, turn = schema("ask.v1"), schema("answer.v1"), schema("turn.v1")
    turn_fields = [k for k in turn["required"] if k not in ("schema_version", "answer")]
    assert ask["required"] == [*answer["required"], *turn_fields]
    assert {k: v for k, v in ask["properties"].items() if k in answer["properties"] and k != "schema_version"} == {
        k: v for k, v in answer["properties"].items() if k != "schema_version"
    }
    assert list(ask["properties"]) == [*answer["properties"], *turn_fields]
    for field in turn_fields:
        assert ask["properties"][field].pop("description")
        assert ask["properties"][field] == {k: v for k, v in turn["properties"][field].items() if k != "description"}
    assert (ask["allOf"], ask["additionalProperties"]) == (answer["allOf"], False)


@pytest.mark.slow
def test_ask_in_a_thread_through_kb_mcp(kb_dir: Path, scripted_pythonpath: str) -> None:
    async def scenario(session: ClientSession) -> dict[str, Any]:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        first = await session.call_tool("ask", {"question": "When was Heliograph 2.3.0 released?"})
        assert first.structured_content is not None, text_of(first)
        thread_id = first.structured_content["thread_id"]
        return {
            "tools": listed,
            "first": first,
            "follow": await session.call_tool("ask", {"question": "What does it add?", "thread_id": thread_id}),
            "unknown": await session.call_tool("ask", {"question": "What does it add?", "thread_id": UNKNOWN}),
            "long": await session.call_tool("ask", {"question": "What does it add?", "thread_id": "x" * 10_000}),
            "typed": await session.call_tool("ask", {"question": "What does it add?", "thread_id": 7}),
            "threads": await session.call_tool("threads", {}),
            "thread": await session.call_tool("threads", {"thread_id": thread_id}),
        }

    got = with_server(kb_dir, scenario, "--backend", "scripted", env={"PYTHONPATH": scripted_pythonpath})
    ask_tool = got["tools"]["ask"]
    bounds = ask_tool.input_schema["properties"]["thread_id"]
    assert (bounds["minLength"], bounds["maxLength"]) == (1, THREAD_ID_CHARS)
    assert "thread_id" not in ask_tool.input_schema.get("required", [])
    assert "pass thread_id back" in (ask_tool.description or "")

    first, follow = (ok(got[name]) for name in ("first", "follow"))
    assert json.loads(text_of(got["follow"])) == follow  # the text is the structured content, as for every tool
    assert (first["position"], follow["position"]) == (1, 2)
    assert follow["thread_id"] == first["thread_id"]
    assert follow["asked"] == "What does it add?"
    assert follow["standalone"] == f"What does it add? ({TOPIC})" != follow["asked"]
    assert follow["grounded"] and "mirror calibration" in follow["answer"]

    assert text_of(got["unknown"]) == (
        f"kb: error: no thread with id {UNKNOWN!r} (pass the thread_id an earlier ask returned"
        " (the threads tool lists them), or leave it out to start a new thread)"
    )
    assert text_of(got["long"]) == "kb: error: the thread_id is 10000 characters long; at most 64 are accepted"
    assert text_of(got["typed"]).startswith("kb: error: invalid arguments for ask: thread_id: ")
    for name in ("unknown", "long", "typed"):
        assert got[name].is_error and "\n" not in text_of(got[name])
    assert [(t["thread_id"], t["turns"]) for t in ok(got["threads"])["threads"]] == [(first["thread_id"], 2)]
    assert [t["position"] for t in ok(got["thread"])["turns"]] == [1, 2]


def ok(result: CallToolResult) -> dict[str, Any]:
    """The structured content of a successful call, valid against its schema (and ask's against answer.v1 too)."""
    assert not result.is_error, text_of(result)
    data = result.structured_content
    assert data is not None
    return checked(data) if data["schema_version"] == "ask.v1" else _valid(data)


def _valid(data: dict[str, Any]) -> dict[str, Any]:
    jsonschema.validate(data, schema(data["schema_version"]))
    return data
