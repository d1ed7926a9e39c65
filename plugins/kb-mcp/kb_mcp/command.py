"""``kb mcp``: serve the knowledge base to MCP clients over stdio (default) or loopback streamable HTTP."""

from __future__ import annotations

import socket
import sys

import click

import kb_core

LOOPBACK = "127.0.0.1"
HTTP_PATH = "/mcp"


@click.command("mcp")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: speak MCP on stdin/stdout (how MCP clients start a server); http: streamable HTTP.",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=8765,
    show_default=True,
    help="Port for --transport http (bound to 127.0.0.1 only).",
)
@kb_core.pass_session
def mcp_command(session: kb_core.Session, transport: str, port: int) -> None:
    """Serve this knowledge base as a Model Context Protocol server.

    Tools: search, ask, fetch, list_documents, ingest. With --transport http the server listens on
    http://127.0.0.1:PORT/mcp and nowhere else. Runs until the client disconnects (stdio) or
    Ctrl-C (exit code 130). Status lines go to stderr; stdout is the protocol's.
    """
    import anyio  # the SDK loads only when the server starts, not with every kb command

    from kb_mcp.server import build_server
    from kb_mcp.tools import KbTools

    tools = KbTools(session.kb(create=True))
    server = build_server(tools)
    if transport == "stdio":
        anyio.run(server.run_stdio_async)
        return
    _check_port(port)
    click.echo(f"kb mcp: serving {session.config.kb_path} on http://{LOOPBACK}:{port}{HTTP_PATH}", err=True)
    sys.stderr.flush()
    anyio.run(lambda: server.run_streamable_http_async(host=LOOPBACK, port=port, streamable_http_path=HTTP_PATH))


def _check_port(port: int) -> None:
    """Refuse a port that cannot be bound on loopback with one line (uvicorn would log and exit 1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, port))
        except OSError as exc:
            raise kb_core.KbError(
                f"cannot listen on {LOOPBACK}:{port}: {exc.strerror or exc}", hint="choose another --port"
            ) from None
