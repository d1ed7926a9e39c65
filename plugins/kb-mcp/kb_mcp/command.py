"""``kb mcp``: serve the knowledge base to MCP clients over stdio (default) or loopback streamable HTTP."""

from __future__ import annotations

import os
import signal
import socket
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

import kb_core
from kb_core.bounds import PORT
from kb_core.commands import Bounded, Session, pass_session

if TYPE_CHECKING:
    from kb_mcp.tools import KbTools

LOOPBACK = "127.0.0.1"
HTTP_PATH = "/mcp"
EXIT_INTERRUPTED = 130  # Ctrl-C, as every kb command
EXIT_TERMINATED = 0  # SIGTERM: a stop that was asked for (as kb watch)


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
    type=Bounded(PORT),
    default=8765,
    show_default=True,
    help="Port for --transport http (bound to 127.0.0.1 only; 0: any free one).",
)
@click.option(
    "--ingest-folder",
    "ingest_folders",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A folder whose files the ingest tool may read (repeatable; also [backends.mcp] ingest_folders)."
    " None by default: the ingest tool then stores only text.",
)
@pass_session
def mcp_command(session: Session, transport: str, port: int, ingest_folders: tuple[Path, ...]) -> None:
    """Serve this knowledge base as a Model Context Protocol server.

    Tools: search, ask (with follow-ups in threads), fetch, answers, threads, list_documents, ingest.
    With --transport http the server listens on http://127.0.0.1:PORT/mcp and nowhere else. The
    ingest tool reads files only inside the --ingest-folder folders and [backends.mcp]
    ingest_folders (none by default: text only). Runs until the client disconnects (stdio), Ctrl-C
    (exit code 130, at once, even during a call) or SIGTERM (exit code 0). Status lines go to
    stderr; stdout is the protocol's.
    """
    import anyio  # the SDK loads only when the server starts, not with every kb command

    from kb_mcp.folders import IngestFolders, configured_folders
    from kb_mcp.server import build_server
    from kb_mcp.tools import KbTools

    allowed = IngestFolders.of([*configured_folders(session.config), *ingest_folders])
    tools = KbTools(session.kb(create=True), ingest_folders=allowed)
    server = build_server(tools)
    if transport == "stdio":
        stop_at_once_on_signals(tools)
        anyio.run(server.run_stdio_async)
        return
    port = _check_port(port)
    click.echo(f"kb mcp: serving {session.config.kb_path} on http://{LOOPBACK}:{port}{HTTP_PATH}", err=True)
    sys.stderr.flush()
    anyio.run(lambda: server.run_streamable_http_async(host=LOOPBACK, port=port, streamable_http_path=HTTP_PATH))


def stop_at_once_on_signals(tools: KbTools) -> None:
    """SIGINT ends the process at once with exit code 130, SIGTERM with 0, whatever it is doing.

    The stdio transport reads stdin on a worker thread that no cancellation reaches, so a graceful
    stop would wait for the client to close stdin (and a running ``ask`` for its answer). The
    knowledge base is closed first when no call is running; a call that is cut short loses only its
    own uncommitted transaction (SQLite rolls it back) and the writer lock goes with the process.
    """

    def stop(signum: int, _frame: FrameType | None) -> None:
        interrupted = signum == signal.SIGINT
        try:
            if interrupted:
                os.write(2, b"kb: interrupted\n")
            tools.close_if_idle()
        finally:
            os._exit(EXIT_INTERRUPTED if interrupted else EXIT_TERMINATED)

    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:  # a background job's ignored Ctrl-C stays ignored
            signal.signal(sig, stop)


def _check_port(port: int) -> int:
    """``port``, or for 0 a free one, once it is known to bind on loopback; a port that cannot is one line
    (uvicorn would log and exit 1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, port))
        except OSError as exc:
            raise kb_core.KbError(
                f"cannot listen on {LOOPBACK}:{port}: {exc.strerror or exc}", hint="choose another --port"
            ) from None
        return int(probe.getsockname()[1])
