"""The bearer token: required off loopback, checked on every request; and `kb serve` as a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from click.testing import CliRunner

from kb_core import KbError
from kb_core.commands import Session
from kb_core.testing import default_ctrl_c
from kb_serve.client import parse_sse
from kb_serve.command import serve_command
from kb_serve.openapi import own_schema
from kb_serve.settings import ServeSettings, is_loopback

TOKEN = "correct-horse-battery-staple"


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "example.org", "[::]"])
def test_binding_off_loopback_without_a_token_is_refused(host: str) -> None:
    with pytest.raises(KbError, match="a bearer token is required"):
        ServeSettings(host=host).check()
    ServeSettings(host=host, token=TOKEN).check()


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_needs_no_token(host: str) -> None:
    assert is_loopback(host)
    ServeSettings(host=host).check()


def test_an_empty_token_is_refused() -> None:
    with pytest.raises(KbError, match="token is empty"):
        ServeSettings(token="  ").check()


def test_kb_serve_off_loopback_without_a_token_refuses_before_opening_anything(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        serve_command, ["--host", "0.0.0.0", "--port", "0"], obj=Session(None, str(tmp_path / "kb"), None)
    )
    assert isinstance(result.exception, KbError) and "bearer token is required" in result.exception.message
    assert "KB_SERVE_TOKEN" in result.exception.hint
    assert not (tmp_path / "kb").exists()


def test_with_a_token_every_request_must_carry_it(start_server: Callable[..., Any]) -> None:
    server = start_server(token=TOKEN)
    with httpx.Client(base_url=server.url, timeout=30) as anonymous:
        for method, path in (
            ("GET", "/health"),
            ("GET", "/openapi.json"),
            ("GET", "/documents"),
            ("GET", "/search?q=wind"),
            ("POST", "/ask"),
            ("GET", "/threads"),
            ("POST", "/threads"),
            ("GET", "/threads/thr_000000000000"),
            ("DELETE", "/threads/thr_000000000000"),
            ("POST", "/threads/thr_000000000000/ask"),
            ("DELETE", "/documents/notes/heliograph.md"),
            ("GET", "/nowhere"),
        ):
            reply = anonymous.request(method, path)
            assert reply.status_code == 401, (method, path)
            assert reply.headers["www-authenticate"] == "Bearer"
            jsonschema.validate(reply.json(), own_schema("error"))
        for header in (f"Bearer {TOKEN}x", f"bearer {TOKEN}", TOKEN, f"Bearer  {TOKEN}", "Bearer", f"Basic {TOKEN}"):
            reply = anonymous.get("/health", headers={"Authorization": header})
            assert reply.status_code == 401 and reply.json()["error"] == "the bearer token is wrong", header
    with server.client() as http:
        health = http.get("/health").json()
        assert health["auth"] is True and health["documents"] > 0
        assert http.get("/search", params={"q": "wind"}).status_code == 200
        events = parse_sse(http.post("/ask/stream", json={"question": "When does Heliograph stow the panels?"}).text)
        assert events[-1][0] == "answer"
        assert len(http.get("/documents").json()["documents"]) == health["documents"]  # the 401 DELETE did nothing


@pytest.mark.slow
def test_kb_serve_runs_as_a_process_and_stops_on_ctrl_c(
    corpus_kb: Path, tmp_path: Path, serve_json: Callable[[subprocess.Popen[str]], dict[str, Any]]
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")} | {"KB_SERVE_TOKEN": TOKEN}
    kb = str(Path(sys.executable).parent / "kb")
    refused = subprocess.run(
        [kb, "--kb", str(corpus_kb), "serve", "--host", "0.0.0.0"],
        check=False,
        capture_output=True,
        text=True,
        env={k: v for k, v in env.items() if k != "KB_SERVE_TOKEN"},
        timeout=60,
    )
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and "bearer token is required" in refused.stderr
    command = [kb, "--kb", str(corpus_kb), "serve", "--port", "0", "--json"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=default_ctrl_c
    )
    try:
        info = serve_json(process)
        jsonschema.validate(info, own_schema("serve.v1"))
        assert info["auth"] is True and info["host"] == "127.0.0.1"
        with httpx.Client(base_url=info["url"], timeout=30) as http:
            assert http.get("/health").status_code == 401
            reply = http.get("/search", params={"q": "stow angle"}, headers={"Authorization": f"Bearer {TOKEN}"})
            assert reply.status_code == 200 and reply.json()["hits"]
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 130  # kb's exit code for "interrupted", after uvicorn's graceful shutdown
        assert process.stderr is not None and "Traceback" not in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
