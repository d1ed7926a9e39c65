"""``kb serve``: the command; the server itself is in :mod:`kb_serve.running`, imported when it runs."""

from __future__ import annotations

import click

from kb_core import LIMITS
from kb_core.bounds import FILE_BYTES, PORT, QUERY_CACHE, QUEUE, WAIT_S, WORKERS
from kb_core.commands import Bounded, Session, json_option, pass_session
from kb_serve.settings import ServeSettings


@click.command("serve")
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind. Anything but loopback requires --token."
)
@click.option("--port", default=8765, show_default=True, type=Bounded(PORT), help="Port (0: any free one).")
@click.option("--token", envvar="KB_SERVE_TOKEN", help="Bearer token every request must carry (or KB_SERVE_TOKEN).")
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME[:PORT]",
    help="Another host name the server answers to (repeatable; besides its address and localhost).",
)
@click.option(
    "--max-file-bytes", type=Bounded(FILE_BYTES), help="Largest uploaded file (default: [ingest] max_file_bytes)."
)
@click.option(
    "--max-upload-bytes",
    type=Bounded(FILE_BYTES),
    default=LIMITS.upload_bytes,
    show_default=True,
    help="Largest upload request (all its files together).",
)
@click.option(
    "--readers",
    type=Bounded(WORKERS),
    default=4,
    show_default=True,
    help="Searches served at once (each keeps its own connections).",
)
@click.option(
    "--ask-queue",
    type=Bounded(QUEUE),
    default=4,
    show_default=True,
    help="Questions that may wait while one is generated; more get 503.",
)
@click.option(
    "--ask-wait",
    type=Bounded(WAIT_S),
    default=300.0,
    show_default=True,
    help="Seconds a question waits for the language model before a 503.",
)
@click.option(
    "--search-timeout",
    type=Bounded(WAIT_S),
    default=30.0,
    show_default=True,
    help="Seconds a search or listing may take before a 504.",
)
@click.option(
    "--query-cache",
    type=Bounded(QUERY_CACHE),
    default=2048,
    show_default=True,
    help="Query vectors kept for repeated searches (0: none).",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="warning",
    show_default=True,
    help="Server log level (info: one line per request).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a web browser once listening.")
@json_option
@pass_session
def serve_command(
    session: Session,
    host: str,
    port: int,
    token: str | None,
    allow_hosts: tuple[str, ...],
    max_file_bytes: int | None,
    max_upload_bytes: int,
    readers: int,
    ask_queue: int,
    ask_wait: float,
    search_timeout: float,
    query_cache: int,
    log_level: str,
    open_browser: bool,
    as_json: bool,
) -> None:
    """Serve the knowledge base over HTTP, with a page for the browser at / (--open opens it).

    The API: upload, delete, list, read, search, ask (streamed), stored answers, /openapi.json.

    Listens on 127.0.0.1 unless --host says otherwise; any other address needs a bearer token
    (--token or KB_SERVE_TOKEN), which every request must then carry. Requests must name the
    server's address or localhost as their Host (more with --allow-host), and a write from a web
    page must come from the same origin. Uploaded files are kept in
    the knowledge base's uploads/ folder. Prints one line (serve.v1 with --json) once listening.
    """
    settings = ServeSettings(
        host=host,
        port=port,
        token=token,
        allow_hosts=allow_hosts,
        max_file_bytes=max_file_bytes or session.config.ingest.max_file_bytes,
        max_upload_bytes=max_upload_bytes,
        readers=readers,
        ask_queue=ask_queue,
        ask_wait_s=ask_wait,
        search_timeout_s=search_timeout,
        query_cache=query_cache,
    )
    from kb_serve.running import serve

    serve(session, settings, as_json, log_level, open_browser=open_browser)
