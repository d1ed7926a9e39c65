"""Messages a careless or hostile agent sends a real ``kb mcp``: every request gets a reply, never silence.

Reproductions on stdio: a request holding ``\\ud800`` (a lone surrogate: JSON, not Unicode) got no reply at all
and the client waited for ever; a line that is not JSON got no ``-32700`` (the HTTP transport gave one). Now
each message is checked before the SDK reads it (:mod:`kb_mcp.messages`): not UTF-8 or not JSON is ``-32700``,
text that is not valid Unicode ``-32602`` with the request's id, JSON that is no JSON-RPC message ``-32600``.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_helpers import KB, scripted_plugin_path, server_env, wait_until_listening
from mcp_types import LATEST_PROTOCOL_VERSION

from kb_core.testing import default_ctrl_c, free_port

pytestmark = pytest.mark.slow
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
INITIALIZE = {
    "protocolVersion": LATEST_PROTOCOL_VERSION,
    "capabilities": {},
    "clientInfo": {"name": "invalid-unicode-test", "version": "0"},
}
REPLY_TIMEOUT_S = 60


def scripted_env(folder: Path) -> dict[str, str]:
    """The environment of a ``kb mcp`` whose ``scripted`` backend is the test plugin."""
    return server_env({"PYTHONPATH": scripted_plugin_path(folder)})


class Lines:
    """``kb --backend scripted mcp`` over stdio, spoken to in raw lines (bytes, as a client may send them)."""

    def __init__(self, kb_dir: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [KB, "--kb", str(kb_dir), "--backend", "scripted", "mcp"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            preexec_fn=default_ctrl_c,
        )
        self.next_id = 1000
        self.pending = b""

    def write(self, line: bytes) -> None:
        """Send one line as it is."""
        stdin: IO[bytes] | None = self.process.stdin
        assert stdin is not None
        stdin.write(line + b"\n")
        stdin.flush()

    def receive(self) -> dict[str, Any]:
        """The next message the server writes (a hang fails here). Read from the pipe's descriptor with a buffer of
        its own: two replies that arrive together must not leave the second in a file object's buffer that
        ``select`` does not see."""
        stdout = self.process.stdout
        assert stdout is not None
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while b"\n" not in self.pending:
            ready, _, _ = select.select([stdout.fileno()], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no reply within {REPLY_TIMEOUT_S} s"
            chunk = os.read(stdout.fileno(), 1 << 16)
            assert chunk, "the server closed stdout"
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return dict(json.loads(line))

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a well-formed request; its reply."""
        self.next_id += 1
        self.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).encode())
        reply = self.receive()
        assert reply.get("id") == self.next_id, reply
        return reply

    def initialize(self) -> None:
        """The MCP handshake."""
        assert "result" in self.request("initialize", INITIALIZE)
        self.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def replies_until_ping(self) -> list[dict[str, Any]]:
        """Send a ping; every message the server writes up to its reply (the ping's reply not included)."""
        self.next_id += 1
        self.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": "ping"}).encode())
        before: list[dict[str, Any]] = []
        while (reply := self.receive()).get("id") != self.next_id or "result" not in reply:
            before.append(reply)
        return before

    def close(self) -> None:
        """Kill the server and close the pipes."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()


def call(tool: str, arguments: dict[str, Any], request_id: int) -> bytes:
    """A ``tools/call`` request as JSON (a lone surrogate becomes its ``\\udxxx`` escape)."""
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    return json.dumps(message).encode()


def error_of(reply: dict[str, Any], code: int, request_id: int | None) -> str:
    """The message of ``reply``, a JSON-RPC error with ``code`` for ``request_id``."""
    assert reply.get("id") == request_id and "result" not in reply, reply
    assert reply["error"]["code"] == code, reply
    return str(reply["error"]["message"])


CASES: list[tuple[bytes, int, int | None, str]] = [
    (
        call("search", {"query": "\ud800 x"}, 41),
        INVALID_PARAMS,
        41,
        "field 'params.arguments.query' is not valid Unicode",
    ),
    (call("ask", {"question": "x \udfff"}, 42), INVALID_PARAMS, 42, "is U+DFFF, half of a surrogate pair"),
    (call("ingest", {"text": "a", "name": "\ud800.md"}, 43), INVALID_PARAMS, 43, "'params.arguments.name'"),
    (b"junk", PARSE_ERROR, None, "Parse error: the message is not JSON"),
    (call("search", {"query": "x"}, 44)[:-1], PARSE_ERROR, None, "not JSON"),  # cut short
    (call("search", {"query": "\xff"}, 45).replace(b"\\u00ff", b"\xff"), PARSE_ERROR, 45, "not valid UTF-8"),
    (b"[1, 2]", INVALID_REQUEST, None, "not a JSON-RPC 2.0 message"),
    (b'{"jsonrpc": "2.0", "id": 46}', INVALID_REQUEST, 46, "not a JSON-RPC 2.0 message"),
    (b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}', INVALID_PARAMS, None, "field 'id' is not valid"),
]


@pytest.fixture(scope="module")
def lines(kb_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lines]:
    """One stdio server for the module (with the scripted backend)."""
    server = Lines(kb_dir, scripted_env(tmp_path_factory.mktemp("plugins")))
    try:
        server.initialize()
        yield server
    finally:
        server.close()


def test_every_request_on_stdio_gets_a_reply(lines: Lines) -> None:
    for line, code, request_id, fragment in CASES:
        lines.write(line)
        message = error_of(lines.receive(), code, request_id)
        assert fragment in message and "\n" not in message, message
    lines.write(b"")  # a blank line is no message: nothing to answer
    lines.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": "\ud800"}}).encode())
    assert lines.replies_until_ping() == []  # a notification is never answered, even when refused
    listed = lines.request("tools/call", {"name": "list_documents", "arguments": {}})
    assert [d["path"] for d in listed["result"]["structuredContent"]["documents"]]  # and the server goes on


def test_a_nul_in_a_query_is_a_tool_error_line(lines: Lines) -> None:
    reply = lines.request("tools/call", {"name": "search", "arguments": {"query": "wind\x00speed"}})
    assert reply["result"]["isError"] is True
    text = reply["result"]["content"][0]["text"]
    assert text.startswith("kb: error: the query contains a NUL character (U+0000) at character 5"), text


# -- over streamable HTTP ----------------------------------------------------------------------------


class Http:
    """``kb --backend scripted mcp --transport http`` on a free loopback port, spoken to with raw bodies."""

    def __init__(self, kb_dir: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [KB, "--kb", str(kb_dir), "--backend", "scripted", "mcp", "--transport", "http", "--port", str(self.port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=default_ctrl_c,
        )
        wait_until_listening(self.process, self.port)
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", headers=headers, timeout=REPLY_TIMEOUT_S)
        status, first = self.post(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE}))
        assert status == 200 and first is not None, first
        self.http.headers["mcp-protocol-version"] = first["result"]["protocolVersion"]
        self.post(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def post(self, body: bytes | str) -> tuple[int, dict[str, Any] | None]:
        """POST one message: the status and the JSON-RPC reply (from JSON or the event stream; None for 202)."""
        reply = self.http.post("/mcp", content=body)
        session = reply.headers.get("mcp-session-id")
        if session:
            self.http.headers["mcp-session-id"] = session
        if reply.status_code == 202:
            return 202, None
        if reply.headers.get("content-type", "").startswith("text/event-stream"):
            lines = re.split(r"\r\n|\r|\n", reply.text)  # SSE's only line ends; str.splitlines cuts at U+2028 too
            data = [line[5:].strip() for line in lines if line.startswith("data:")]
            return reply.status_code, dict(json.loads(data[-1]))
        return reply.status_code, dict(reply.json())

    def close(self) -> None:
        self.http.close()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def http(kb_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Http]:
    """One HTTP server for the module (with the scripted backend)."""
    server = Http(kb_dir, scripted_env(tmp_path_factory.mktemp("http-plugins")))
    try:
        yield server
    finally:
        server.close()


def test_every_request_over_http_gets_the_same_reply(http: Http) -> None:
    for body, code, request_id, fragment in CASES:
        status, reply = http.post(body)
        assert status == 400 and reply is not None, (status, reply)
        message = error_of(reply, code, request_id)
        assert fragment in message, message
    status, listed = http.post(call("list_documents", {}, 7))
    assert status == 200 and listed is not None and listed["result"]["structuredContent"]["documents"]


# -- any text, in every argument of every tool -----------------------------------------------------

TEXT = st.one_of(
    st.text(st.characters(exclude_categories=[]), max_size=40),  # any code point, lone surrogates too
    st.text(st.sampled_from(["\ud800", "\udcff", "\x00", "\u202e", "\u2066", "a", " ", "é", "한", "😀"]), max_size=40),
    st.builds(lambda c, n: c * n, st.sampled_from(["x", "\udc80", "é", " ", "\x00"]), st.integers(1, 10**6)),
)
ARGUMENTS = st.one_of(
    st.builds(lambda t: ("search", {"query": t}), TEXT),
    st.builds(lambda t: ("search", {"query": "wind", "path": t}), TEXT),
    st.builds(lambda t: ("ask", {"question": t}), TEXT),
    st.builds(lambda t: ("ask", {"question": "How long are backups kept?", "thread_id": t}), TEXT),
    st.builds(lambda t: ("fetch", {"target": t}), TEXT),
    st.builds(lambda t: ("list_documents", {"prefix": t}), TEXT),
    st.builds(lambda t: ("threads", {"thread_id": t}), TEXT),
    st.builds(lambda t: ("answers", {"answer_id": t}), TEXT),
    st.builds(lambda t: ("ingest", {"text": "# Note\n\nSome text.\n", "name": t}), TEXT),
    st.builds(lambda t: ("ingest", {"text": t[:10_000], "name": "fuzzed.md"}), TEXT),  # (stored: kept small)
)
KEYS = st.sampled_from(["id", "method", "jsonrpc", "params"])
#: Lines that are not a well-formed request: bytes (not UTF-8, not JSON), and JSON of any shape.
JUNK = st.one_of(
    st.binary(max_size=200).map(lambda b: b.replace(b"\n", b" ").replace(b"\r", b" ")),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(st.characters(exclude_categories=[]), max_size=10),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner),
        max_leaves=6,
    ).map(lambda value: json.dumps(value).encode()),
)


def check_tool_reply(reply: dict[str, Any], request_id: int) -> None:
    """A result (a tool error is one ``kb: error:`` line, never the SDK's bug report), or a JSON-RPC error with the
    request's id (-32602: text that is not valid Unicode)."""
    assert reply.get("id") == request_id, reply
    if "error" in reply:
        assert reply["error"]["code"] == INVALID_PARAMS and "not valid Unicode" in reply["error"]["message"], reply
        return
    result = reply["result"]
    if result.get("isError"):
        text = result["content"][0]["text"]
        assert text.startswith("kb: error: ") and "\n" not in text, text  # not "Error executing tool ..."


def check_junk_replies(replies: list[dict[str, Any]]) -> None:
    """What junk may get: nothing (a notification), or errors of the documented codes (and the SDK's -32601 for a
    well-formed request of a method it does not know)."""
    for reply in replies:
        if "error" in reply:
            assert reply["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS), reply
        # (a result is fine: junk can spell a real request, e.g. {"id": 0, "method": "ping", ...})


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(arguments=ARGUMENTS, junk=JUNK)
def test_any_text_and_any_line_on_stdio_gets_a_reply(
    lines: Lines, arguments: tuple[str, dict[str, Any]], junk: bytes
) -> None:
    tool, args = arguments
    lines.next_id += 1
    lines.write(call(tool, args, lines.next_id))
    check_tool_reply(lines.receive(), lines.next_id)
    lines.write(junk)
    check_junk_replies(lines.replies_until_ping())  # a hang fails in receive()


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(arguments=ARGUMENTS, junk=JUNK)
def test_any_text_and_any_body_over_http_gets_a_reply(
    http: Http, arguments: tuple[str, dict[str, Any]], junk: bytes
) -> None:
    tool, args = arguments
    status, reply = http.post(call(tool, args, 9))
    assert status < 500 and reply is not None, (status, reply)
    if status == 413:  # past the SDK's 4 MiB (a million characters, escaped): a JSON-RPC error too
        assert "larger than" in error_of(reply, INVALID_REQUEST, None)
        return
    check_tool_reply(reply, 9)
    status, reply = http.post(junk)
    assert status < 500, (status, reply)
    check_junk_replies([reply] if reply is not None else [])
