"""End to end: a real ``kb mcp`` subprocess over stdio, driven by the MCP SDK's own client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import ClientSession
from mcp.types import CallToolResult, TextContent
from mcp_helpers import NOTES, run_kb, schema, with_server, without_timings, write_notes

pytestmark = pytest.mark.slow


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def ok(result: CallToolResult) -> dict[str, Any]:
    """The structured content of a successful call, checked against its text and its JSON Schema."""
    assert not result.is_error, text_of(result)
    data = result.structured_content
    assert data is not None
    jsonschema.validate(data, schema(data["schema_version"]))
    return data


def test_tools_are_listed_with_their_arguments(kb_dir: Path) -> None:
    async def scenario(session: ClientSession) -> dict[str, Any]:
        return {tool.name: tool.input_schema for tool in (await session.list_tools()).tools}

    tools = with_server(kb_dir, scenario)
    assert sorted(tools) == ["answers", "ask", "fetch", "ingest", "list_documents", "search", "threads"]
    assert tools["search"]["required"] == ["query"]
    assert set(tools["search"]["properties"]) == {"query", "mode", "k", "path"}
    assert tools["fetch"]["required"] == ["target"]
    assert (tools["ask"]["required"], set(tools["ask"]["properties"])) == (
        ["question"],
        {"question", "mode", "k", "thread_id"},
    )


def test_search_returns_what_kb_search_json_prints(kb_dir: Path) -> None:
    async def scenario(session: ClientSession) -> list[CallToolResult]:
        return [
            await session.call_tool("search", {"query": "when are backups verified", "k": 3}),
            await session.call_tool("search", {"query": "backups", "mode": "lexical", "path": "ops/*"}),
            await session.call_tool("search", {"query": "zzzqqq unrelated", "mode": "lexical"}),
        ]

    hybrid, lexical, nothing = with_server(kb_dir, scenario)
    data = ok(hybrid)
    assert json.loads(text_of(hybrid)) == data  # the text is the --json document itself
    assert data["schema_version"] == "search_response.v1"
    assert data["hits"][0]["doc_path"] == "ops/backups.md"
    assert all(0.0 <= hit["score"] <= 1.0 for hit in data["hits"])
    cli = run_kb(kb_dir, "search", "when are backups verified", "--k", "3", "--json")
    assert cli.returncode == 0, cli.stderr
    assert without_timings(data) == without_timings(json.loads(cli.stdout))
    assert {hit["doc_path"] for hit in ok(lexical)["hits"]} == {"ops/backups.md"}
    assert ok(nothing)["hits"] == []


def test_fetch_returns_the_verbatim_text(kb_dir: Path) -> None:
    async def scenario(session: ClientSession) -> dict[str, CallToolResult]:
        hit = (await session.call_tool("search", {"query": "daily backups kept 35 days", "k": 1})).structured_content
        assert hit is not None
        first = hit["hits"][0]
        citation = f"{first['citation']['path']}#L{first['citation']['start_line']}-L{first['citation']['end_line']}"
        return {
            "citation": await session.call_tool("fetch", {"target": citation}),
            "chunk": await session.call_tool("fetch", {"target": first["chunk_id"]}),
            "document": await session.call_tool("fetch", {"target": "ops/backups.md"}),
            "lines": await session.call_tool("fetch", {"target": "heliograph.md#L3-L4"}),
            "missing": await session.call_tool("fetch", {"target": "nope.md"}),
            "outside": await session.call_tool("fetch", {"target": "heliograph.md#L3-L40"}),
        }

    got = with_server(kb_dir, scenario)
    lines = NOTES["ops/backups.md"].splitlines()
    cited = ok(got["citation"])
    assert text_of(got["citation"]) == "\n".join(lines[cited["start_line"] - 1 : cited["end_line"]])
    assert cited["chunk_id"] and cited["source"] == "chunk"
    assert text_of(got["chunk"]) == text_of(got["citation"])
    assert text_of(got["document"]) == NOTES["ops/backups.md"]
    assert ok(got["document"])["source"] == "file"
    assert text_of(got["lines"]) == "Heliograph 2.3.0 was released on 12 March 2024.\nIt adds mirror calibration."
    assert ok(got["lines"])["citation"] == "heliograph.md#L3-L4"
    assert got["missing"].is_error
    cli = run_kb(kb_dir, "inspect", "nope.md")
    assert cli.returncode == 2
    assert text_of(got["missing"]) == cli.stderr.strip()  # the same one line as the CLI
    assert got["outside"].is_error
    assert text_of(got["outside"]).startswith("kb: error: lines 3-40 are outside heliograph.md (4 lines)")


@pytest.mark.parametrize(
    ("arguments", "cli_args"),
    [
        ({"query": "   "}, ["search", "   "]),
        ({"query": "backups", "path": "ops/[a"}, ["search", "backups", "--path", "ops/[a"]),
    ],
)
def test_search_mistakes_carry_the_cli_line(kb_dir: Path, arguments: dict[str, Any], cli_args: list[str]) -> None:
    async def scenario(session: ClientSession) -> CallToolResult:
        return await session.call_tool("search", arguments)

    result = with_server(kb_dir, scenario)
    assert result.is_error
    cli = run_kb(kb_dir, *cli_args)
    assert cli.returncode == 2
    assert text_of(result) == cli.stderr.strip().splitlines()[-1]


def test_bad_mode_and_k_are_one_line_tool_errors(kb_dir: Path) -> None:
    async def scenario(session: ClientSession) -> list[CallToolResult]:
        return [
            await session.call_tool("search", {"query": "x", "mode": "fuzzy"}),
            await session.call_tool("search", {"query": "x", "k": 0}),
            await session.call_tool("ask", {"question": ""}),
        ]

    mode, k, question = with_server(kb_dir, scenario)
    assert text_of(mode) == "kb: error: unknown search mode 'fuzzy' (use lexical, vector or hybrid)"
    assert text_of(k) == "kb: error: k = 0 is not a whole number from 1 to 1,000"  # kb_core.bounds.K's, as kb serve's
    assert text_of(question).startswith("kb: error: the question is empty")
    assert all(r.is_error and "\n" not in text_of(r) for r in (mode, k, question))


def test_list_documents_matches_kb_list_json(kb_dir: Path) -> None:
    async def scenario(session: ClientSession) -> list[CallToolResult]:
        return [
            await session.call_tool("list_documents", {}),
            await session.call_tool("list_documents", {"prefix": "ops/"}),
        ]

    everything, ops = with_server(kb_dir, scenario)
    assert [d["path"] for d in ok(everything)["documents"]] == sorted(NOTES)
    assert [d["path"] for d in ok(ops)["documents"]] == ["ops/backups.md", "ops/oncall.md"]
    cli = run_kb(kb_dir, "list", "--prefix", "ops/", "--json")
    assert ok(ops) == json.loads(cli.stdout)


def test_ingest_a_folder_and_text(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    more = write_notes(tmp_path / "more", {"glossary.md": "# Glossary\n\nA heliostat follows the sun.\n"})
    memo = "# Memo\n\nThe lighthouse on Skerry Island is painted blue.\n"

    async def scenario(session: ClientSession) -> dict[str, CallToolResult]:
        out = {
            "folder": await session.call_tool("ingest", {"path": str(more)}),
            "text": await session.call_tool("ingest", {"text": memo, "name": "memos/q1.md"}),
        }
        out["search"] = await session.call_tool("search", {"query": "lighthouse painted", "mode": "lexical"})
        out["fetch"] = await session.call_tool("fetch", {"target": "memos/q1.md"})
        out["update"] = await session.call_tool(
            "ingest", {"text": memo.replace("blue", "green"), "name": "memos/q1.md"}
        )
        out["escape"] = await session.call_tool("ingest", {"text": memo, "name": "../outside.md"})
        out["empty"] = await session.call_tool("ingest", {"text": "  \n", "name": "memos/q1.md"})
        out["suffix"] = await session.call_tool("ingest", {"text": memo, "name": "memo.exe"})
        out["both"] = await session.call_tool("ingest", {"path": str(more), "text": memo})
        out["missing"] = await session.call_tool("ingest", {"path": str(tmp_path / "absent")})
        out["after"] = await session.call_tool("fetch", {"target": "memos/q1.md"})
        return out

    got = with_server(kb_dir, scenario, mcp_args=["--ingest-folder", str(tmp_path)])
    assert ok(got["folder"])["added"] == ["glossary.md"]
    assert ok(got["text"])["added"] == ["memos/q1.md"]
    assert ok(got["search"])["hits"][0]["doc_path"] == "memos/q1.md"
    assert text_of(got["fetch"]) == memo
    assert ok(got["update"])["updated"] == ["memos/q1.md"]
    assert text_of(got["escape"]).startswith("kb: error: the name '../outside.md' must be a relative path")
    assert text_of(got["empty"]).startswith("kb: error: the text is empty")
    assert text_of(got["suffix"]).startswith("kb: error: no parser for 'memo.exe'")
    assert text_of(got["both"]).startswith("kb: error: give either path")
    assert text_of(got["missing"]) == f"kb: error: no such file or folder: {tmp_path / 'absent'} (check the path)"
    assert all(got[k].is_error for k in ("escape", "empty", "suffix", "both", "missing"))
    assert text_of(got["after"]) == memo.replace("blue", "green")  # refused calls changed nothing
    assert not (tmp_path / "outside.md").exists()
    listed = json.loads(run_kb(kb_dir, "list", "--json").stdout)
    assert [d["path"] for d in listed["documents"]] == ["glossary.md", "memos/q1.md"]


def test_sees_what_another_kb_process_wrote_and_fetches_a_changed_file_from_its_chunks(tmp_path: Path) -> None:
    notes = write_notes(tmp_path / "notes", {"a.md": "# A\n\nThe albatross glides.\n"})
    kb_dir = tmp_path / "kb"
    assert run_kb(kb_dir, "ingest", str(notes)).returncode == 0

    async def scenario(session: ClientSession) -> dict[str, CallToolResult]:
        write_notes(notes, {"b.md": "# B\n\nThe bittern booms at night.\n"})
        assert run_kb(kb_dir, "ingest", str(notes)).returncode == 0  # another process, while the server runs
        found = await session.call_tool("search", {"query": "bittern booms", "mode": "lexical"})
        (notes / "a.md").write_text("# A\n\nRewritten, not ingested.\n", encoding="utf-8")
        return {"found": found, "a": await session.call_tool("fetch", {"target": "a.md"})}

    got = with_server(kb_dir, scenario)
    assert [hit["doc_path"] for hit in ok(got["found"])["hits"]] == ["b.md"]
    fetched = ok(got["a"])
    assert (fetched["source"], text_of(got["a"])) == ("chunks", "# A\n\nThe albatross glides.")  # as ingested
