"""``ask`` through a real ``kb mcp`` (a test-only scripted backend, loaded as an installed plugin), and the
streamable HTTP transport on loopback."""

from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path

import anyio
import jsonschema
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent
from mcp_helpers import KB, answer_part, http_server, schema, server_env, with_server

pytestmark = pytest.mark.slow


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def test_ask_answers_with_citations_or_refuses(kb_dir: Path, scripted_pythonpath: str) -> None:
    async def scenario(session: ClientSession) -> list[CallToolResult]:
        return [
            await session.call_tool("ask", {"question": "How long are daily backups kept?"}),
            await session.call_tool("ask", {"question": "What colour is the moon of Xyzzy-9?"}),
        ]

    grounded, refused = with_server(kb_dir, scenario, "--backend", "scripted", env={"PYTHONPATH": scripted_pythonpath})
    for result in (grounded, refused):
        assert not result.is_error, text_of(result)  # a refusal is an answer, not a tool error
        assert result.structured_content is not None
        jsonschema.validate(result.structured_content, schema("ask.v1"))
        jsonschema.validate(answer_part(result.structured_content), schema("answer.v1"))  # today's fields, kept
    answer = grounded.structured_content
    assert answer is not None and answer["grounded"] is True
    assert "35 days" in answer["answer"]
    assert answer["citations"][0]["ref"].startswith("ops/backups.md#L")
    refusal = refused.structured_content
    assert refusal is not None and refusal["grounded"] is False and refusal["refusal_reason"]


def test_a_refused_answer_gives_the_agent_none_of_the_models_text(kb_dir: Path, scripted_pythonpath: str) -> None:
    """Issue 44: an agent reads the tool's text and its structured ``answer``; neither carries what kb refused."""

    async def scenario(session: ClientSession) -> CallToolResult:
        return await session.call_tool("ask", {"question": "How long are daily backups kept?"})

    result = with_server(kb_dir, scenario, "--backend", "withdrawing", env={"PYTHONPATH": scripted_pythonpath})
    assert not result.is_error and result.structured_content is not None
    refusal = result.structured_content
    assert (refusal["grounded"], refusal["refusal_reason"]) == (False, "unsupported")
    assert refusal["answer"].startswith("Insufficient evidence")
    assert "Lovelace" not in text_of(result) and refusal["sentences"] == []  # the refused claims: nowhere


def test_ask_with_an_unknown_backend_is_the_cli_line(kb_dir: Path) -> None:
    async def scenario(session: ClientSession) -> CallToolResult:
        return await session.call_tool("ask", {"question": "How long are daily backups kept?"})

    result = with_server(kb_dir, scenario, "--backend", "nosuch")
    assert result.is_error
    assert text_of(result).startswith("kb: error: no language model named 'nosuch' (available: ")


def test_streamable_http_on_loopback_only(kb_dir: Path) -> None:
    with http_server(kb_dir) as (process, port):

        async def main() -> CallToolResult:
            async with (
                streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await session.call_tool("search", {"query": "pager on call", "k": 1})

        result = anyio.run(main)
        assert not result.is_error
        assert result.structured_content is not None
        assert result.structured_content["hits"][0]["doc_path"] == "ops/oncall.md"
        listening = [
            line
            for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
            if line.split()[1].endswith(f":{port:04X}") and line.split()[3] == "0A"
        ]
        assert listening and all(line.split()[1].startswith("0100007F:") for line in listening)  # 127.0.0.1 only
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
        assert f"on http://127.0.0.1:{port}/mcp" in err
        assert "Traceback" not in err
        assert process.returncode == 130  # interrupted, as every kb command


def test_http_port_in_use_is_one_line(kb_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [KB, "--kb", str(kb_dir), "mcp", "--transport", "http", "--port", str(port)],
            env=server_env(),
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert (
        done.stderr == f"kb: error: cannot listen on 127.0.0.1:{port}: Address already in use (choose another --port)\n"
    )
