"""Hostile requests to every operation of ``kb serve``'s OpenAPI document (``/v1`` included), hostile
``kb serve`` options, and hostile messages to every tool of ``kb mcp``: no 5xx, no JSON-RPC internal error, no
hang, no process over 2 GB (issue 42). The generators are ``kb_core.testing.hostile``'s, shared with
``bench/robustness.py``; the model is the scripted one of ``kb_core.testing`` (robustness needs no real model).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core.testing.hostile import (
    MEMORY_LIMIT_BYTES,
    TIME_LIMIT_S,
    McpLines,
    http_requests,
    mcp_messages,
    number_texts,
    send,
    texts,
)
from kb_serve.openapi import document

KB = str(Path(sys.executable).parent / "kb")
CORPUS = Path(__file__).resolve().parents[3] / "fixtures" / "corpus"
DOCUMENTS = tuple(str(p.relative_to(CORPUS)) for p in sorted(CORPUS.rglob("*")) if p.is_file())
SOME = settings(
    max_examples=150, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
)  # the same requests every run: the coverage asserted below cannot depend on the draw
FEW = settings(max_examples=6, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def test_every_operation_of_the_document_gets_hostile_requests(start_server: Callable[..., Any]) -> None:
    server = start_server()
    seen: set[str] = set()

    @SOME
    @given(request=http_requests(document(), DOCUMENTS))
    def check(request: Any) -> None:
        seen.add(request.method + " " + request.target.split("?")[0].split("/")[1])
        outcome = send(server.url, request)
        assert outcome.ok, (str(request), outcome)

    check()
    assert {"GET search", "POST ask", "POST v1", "GET documents"} <= seen


def _environment(tmp: Path, corpus_kb: Path) -> tuple[Path, dict[str, str]]:
    import os

    kb_dir = tmp / "kb"
    if not kb_dir.exists():
        shutil.copytree(corpus_kb, kb_dir)
    config = tmp / "config.toml"
    config.write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")}
    return kb_dir, env | {
        "KB_CONFIG": str(config),
        "KB_PLUGIN_MODULES": "kb_core.testing.language_models:ScriptedPlugin",
    }


def _option_values() -> st.SearchStrategy[list[str]]:
    from kb_serve.command import serve_command

    numeric = [o.opts[0] for o in serve_command.params if getattr(o.type, "name", "") in ("integer", "number", "float")]
    one = st.tuples(st.sampled_from(numeric), number_texts()).map(list)
    texty = st.tuples(st.sampled_from(["--allow-host", "--log-level", "--host"]), texts(3)).map(list)
    return st.lists(st.one_of(one, one, texty), min_size=1, max_size=3).map(lambda ps: [x for p in ps for x in p])


@pytest.mark.slow
@FEW
@given(options=_option_values())
def test_no_serve_option_makes_a_server_that_fails(options: list[str], corpus_kb: Path, tmp_path_factory: Any) -> None:
    """``kb serve`` with hostile options refuses them (exit 2) or listens and answers /health and /search."""
    kb_dir, env = _environment(tmp_path_factory.mktemp("serve"), corpus_kb)
    # what a process cannot be given: NUL, a lone surrogate, an argument past Linux's 128 KiB (E2BIG)
    options = [
        o for o in options if "\x00" not in o and not any(0xD800 <= ord(c) <= 0xDFFF for c in o) and len(o) < 100_000
    ]
    command = [KB, "--kb", str(kb_dir), "--backend", "scripted", "serve", "--port", "0", "--json", *options]
    limit = _memory_limit()
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=limit
    )  # noqa: PLW1509
    try:
        url = _listening(process)
        if url is None:
            stderr = process.stderr.read() if process.stderr else ""
            assert process.returncode not in (None, 70) and "internal error" not in stderr, (options, stderr)
            assert "MemoryError" not in stderr, (options, stderr)
            return
        from kb_core.testing.hostile import Request

        for target in ("/health", "/search?q=wind", "/documents"):
            outcome = send(url, Request("GET", target))
            assert outcome.ok, (options, target, outcome)
        assert send(url, Request("POST", "/ask", b'{"question": "wind?"}', {"Content-Type": "application/json"})).ok
    finally:
        process.kill()
        process.communicate()


def _memory_limit() -> Callable[[], None]:
    import resource

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))

    return apply


def _listening(process: subprocess.Popen[str]) -> str | None:
    """The URL ``kb serve --json`` prints once listening; None when it ended first. Fails after the time limit."""
    import json
    import threading

    lines: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        while not lines or lines[-1] != "}\n":
            line = process.stdout.readline()
            if not line:
                return
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(TIME_LIMIT_S)
    assert not reader.is_alive(), "kb serve neither listened nor ended within the time limit"
    if not lines or lines[-1] != "}\n":
        process.wait(TIME_LIMIT_S)
        return None
    return str(json.loads("".join(lines))["url"]).rstrip("/")


@pytest.mark.slow
def test_every_mcp_tool_gets_hostile_arguments(corpus_kb: Path, tmp_path: Path) -> None:
    pytest.importorskip("kb_mcp", reason="kb-mcp is not installed")
    kb_dir, env = _environment(tmp_path, corpus_kb)
    client = McpLines([KB, "--kb", str(kb_dir), "--backend", "scripted", "mcp"], env)
    try:
        tools = client.tools()
        assert {"search", "ask", "fetch"} <= {tool["name"] for tool in tools}

        @settings(max_examples=80, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(message=mcp_messages(tools, DOCUMENTS))
        def check(message: Any) -> None:
            outcome = client.send(message)
            assert outcome.ok, (message if isinstance(message, bytes) else str(message)[:500], outcome)

        check()
    finally:
        client.close()
