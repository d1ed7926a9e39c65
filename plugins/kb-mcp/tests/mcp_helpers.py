"""Helpers for kb-mcp's tests: notes to ingest, a real ``kb mcp`` subprocess driven by the MCP SDK's own
client, the real ``kb`` CLI, and the shipped JSON Schemas."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

import anyio
import httpx2
from anyio.from_thread import start_blocking_portal
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent
from mcp_types import LATEST_PROTOCOL_VERSION

from kb_core.testing import default_ctrl_c, free_port

HERE = Path(__file__).parent
KB = str(Path(sys.executable).parent / "kb")
NOTES = {
    "heliograph.md": "# Heliograph\n\nHeliograph 2.3.0 was released on 12 March 2024.\nIt adds mirror calibration.\n",
    "ops/backups.md": "# Backups\n\nBackups are verified every Sunday by restoring them to a scratch disk.\n\n"
    "## Retention\n\nDaily backups are kept for 35 days.\n",
    "ops/oncall.md": "# On call\n\nThe on-call engineer carries the pager from Monday 09:00 for one week.\n",
}
T = TypeVar("T")
Call = Callable[[str, dict[str, Any]], CallToolResult]  # call(tool, arguments)


def write_notes(folder: Path, notes: dict[str, str] = NOTES) -> Path:
    """Write ``notes`` (relative path -> text) under ``folder``."""
    for relative, text in notes.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text, encoding="utf-8")
    return folder


def scripted_plugin_path(folder: Path) -> str:
    """A PYTHONPATH that makes the test-only plugin ``kb_mcp_test_backend`` look installed (group ``kb``)."""
    dist = folder / "kb_mcp_test_backend-0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kb-mcp-test-backend\nVersion: 0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[kb]\nscripted-llm = kb_mcp_test_backend\n", encoding="utf-8")
    return os.pathsep.join([str(folder), str(HERE)])


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a ``kb mcp`` subprocess: this test's isolated config and data dirs."""
    env = {
        name: os.environ[name] for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "HOME", "PATH") if name in os.environ
    }
    return {**env, **(extra or {})}


def with_server(
    kb_dir: Path,
    scenario: Callable[[ClientSession], Awaitable[T]],
    *args: str,
    env: dict[str, str] | None = None,
    mcp_args: Sequence[str] = (),
) -> T:
    """Start ``kb --kb KB_DIR [args] mcp [mcp_args]`` over stdio, run ``scenario`` with an initialised session."""

    async def main() -> T:
        params = StdioServerParameters(
            command=KB, args=["--kb", str(kb_dir), *args, "mcp", *mcp_args], env=server_env(env)
        )
        with open(os.devnull, "w") as quiet:  # noqa: ASYNC230 (opened once, before any I/O is awaited)
            async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await scenario(session)

    return anyio.run(main)


def run_kb(kb_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``kb`` CLI on ``kb_dir``."""
    return subprocess.run(
        [KB, "--kb", str(kb_dir), *args], check=False, capture_output=True, text=True, env=server_env(), timeout=120
    )


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of ``name`` shipped with kb_core or kb_mcp."""
    from importlib import resources

    for package in ("kb_core.schemas", "kb_mcp.schemas"):
        path = resources.files(package).joinpath(f"{name}.json")
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
    raise LookupError(name)


def answer_part(data: dict[str, Any]) -> dict[str, Any]:
    """The ``answer.v1`` document inside an ``ask.v1`` one: its fields that ``answer.v1`` has."""
    fields = schema("answer.v1")["properties"]
    return {**{k: v for k, v in data.items() if k in fields}, "schema_version": "answer.v1"}


def without_timings(value: Any) -> Any:
    """``value`` with every timing field (``took_ms``, ``*_ms``) dropped, to compare two runs."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if not k.endswith("_ms") and k != "trace_id"}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def text_of(result: CallToolResult) -> str:
    """The text of a tool result's first content block."""
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@contextmanager
def stdio_session(kb_dir: Path, *args: str, mcp_args: Sequence[str] = ()) -> Iterator[Call]:
    """A ``kb mcp`` subprocess over stdio kept open across calls (for a test that makes many, e.g. hypothesis)."""

    @asynccontextmanager
    async def session() -> AsyncIterator[ClientSession]:
        cmd = ["--kb", str(kb_dir), *args, "mcp", *mcp_args]
        params = StdioServerParameters(command=KB, args=cmd, env=server_env())
        with open(os.devnull, "w") as quiet:  # noqa: ASYNC230 (opened once, before any I/O is awaited)
            async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                yield client

    with start_blocking_portal() as portal, portal.wrap_async_context_manager(session()) as client:
        yield lambda tool, arguments: portal.call(client.call_tool, tool, arguments)


def wait_until_listening(process: subprocess.Popen[Any], port: int, timeout: float = 60) -> None:
    """Return once ``process`` accepts connections on loopback ``port``, exits, or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)


@contextmanager
def http_server(
    kb_dir: Path, *mcp_args: str, kb_args: Sequence[str] = (), env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """``kb [kb_args] mcp --transport http`` on a free loopback port, once it accepts connections; killed at the
    end (``env``: more environment, e.g. the scripted model's PYTHONPATH)."""
    port = free_port()
    process = subprocess.Popen(
        [KB, "--kb", str(kb_dir), *kb_args, "mcp", "--transport", "http", "--port", str(port), *mcp_args],
        env=server_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_ctrl_c,
    )
    try:
        wait_until_listening(process, port)
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@contextmanager
def http_session(port: int, token: str | None = None) -> Iterator[Call]:
    """An MCP session with ``kb mcp`` over streamable HTTP, kept open across calls (``token``: sent as
    ``Authorization: Bearer <token>`` on every request)."""

    @asynccontextmanager
    async def session() -> AsyncIterator[ClientSession]:
        async with AsyncExitStack() as stack:
            http = None  # (without a token: the SDK's own client, as an MCP client makes it)
            if token:
                headers = {"Authorization": f"Bearer {token}"}
                timeout = httpx2.Timeout(60, read=300)
                http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=timeout))
            url = f"http://127.0.0.1:{port}/mcp"
            read, write = await stack.enter_async_context(streamable_http_client(url, http_client=http))
            client = await stack.enter_async_context(ClientSession(read, write))
            await client.initialize()
            yield client

    with start_blocking_portal() as portal, portal.wrap_async_context_manager(session()) as client:
        yield lambda tool, arguments: portal.call(client.call_tool, tool, arguments)


class RawStdio:
    """``kb mcp`` over stdio spoken to line by line: the test holds its stdin open and can signal it."""

    def __init__(self, kb_dir: Path, *mcp_args: str) -> None:
        self.process = subprocess.Popen(
            [KB, "--kb", str(kb_dir), "mcp", *mcp_args],
            env=server_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=default_ctrl_c,
        )
        self._next_id = 0

    def send(self, method: str, params: dict[str, Any] | None = None, *, notify: bool = False) -> dict[str, Any]:
        """Send a request (its response) or a notification (an empty dict)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        if not notify:
            self._next_id += 1
            message["id"] = self._next_id
        stdin: IO[bytes] | None = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()
        return {} if notify else self.receive()

    def receive(self, timeout: float = 60) -> dict[str, Any]:
        """The next message the server writes."""
        stdout = self.process.stdout
        assert stdout is not None
        ready, _, _ = select.select([stdout], [], [], timeout)
        assert ready, "the server wrote nothing"
        return dict(json.loads(stdout.readline()))

    def initialize(self) -> None:
        """The MCP handshake."""
        client = {"name": "hostile-agent-test", "version": "0"}
        params = {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": client}
        reply = self.send("initialize", params)
        assert "result" in reply, reply
        self.send("notifications/initialized", notify=True)

    def interrupt(self, sig: int = signal.SIGINT, timeout: float = 5) -> tuple[int, float, str]:
        """Send ``sig`` (stdin still open): the exit code, the seconds it took, and stderr."""
        started = time.monotonic()
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return -1, time.monotonic() - started, ""
        stderr = self.process.stderr
        return self.process.returncode, time.monotonic() - started, stderr.read().decode() if stderr else ""

    def close(self) -> None:
        """Kill the server if it still runs, and close the pipes."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()
