"""Running the HTTP API: a socket bound before uvicorn starts, and a server that says where it listens.

Imported when ``kb serve`` runs, not when kb loads its plugins, so other commands never pay for
uvicorn and Starlette.
"""

from __future__ import annotations

import socket
import sys
import threading
import webbrowser
from typing import Any

import click
import uvicorn

from kb_core import KbError
from kb_core.commands import Session, emit
from kb_serve.app import create_app
from kb_serve.service import KbService
from kb_serve.settings import ServeSettings


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free port), or a KbError saying why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except (OSError, OverflowError) as exc:
        sock.close()
        reason = getattr(exc, "strerror", None) or str(exc)
        raise KbError(f"cannot listen on {host}:{port}: {reason}", hint="pick another --port or --host") from None
    return sock


class _Server(uvicorn.Server):
    """A uvicorn server that says where it listens once it does."""

    def __init__(self, config: uvicorn.Config, announce: Any) -> None:
        super().__init__(config)
        self.announce = announce

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.announce()


def open_page(url: str) -> None:
    """Open ``url`` in the user's web browser, in a thread (a text-mode browser may hold it); a failure is one line."""

    def run() -> None:
        try:
            opened = webbrowser.open(url)
        except Exception as exc:  # webbrowser runs whatever the user's BROWSER names
            opened, reason = False, str(exc)
        else:
            reason = "no browser found"
        if not opened:
            click.echo(f"kb serve: could not open a browser ({reason}); open {url} yourself", err=True)

    threading.Thread(target=run, name="kb-serve-open", daemon=True).start()


def serve(session: Session, settings: ServeSettings, as_json: bool, log_level: str, open_browser: bool = False) -> None:
    """Open the knowledge base, bind, and serve until interrupted (``open_browser``: then open the page)."""
    settings.check()
    config = session.config
    app = create_app(config, settings)
    service: KbService = app.state.service
    service.warm()  # a missing model fails here, as one line, before anything listens
    sock = bind(settings.host, settings.port)
    host, port = sock.getsockname()[:2]
    shown_host = f"[{host}]" if ":" in host else host
    info = {
        "url": f"http://{shown_host}:{port}",
        "host": host,
        "port": port,
        "auth": bool(settings.token),
        "kb_dir": str(config.kb_path),
        "uploads_dir": str(service.uploads),
    }

    def announce() -> None:
        emit(
            as_json,
            "serve.v1",
            info,
            lambda: click.echo(
                f"kb serve: listening on {info['url']} (open it in a browser for the page;"
                f" {'bearer token required' if settings.token else 'loopback, no token'});"
                f" knowledge base {info['kb_dir']}; Ctrl-C stops"
            ),
        )
        sys.stdout.flush()
        if open_browser:  # (a browser may refuse the unspecified address 0.0.0.0: loopback names this server too)
            local = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(host)
            open_page(f"http://{local}:{port}/" if local else f"{info['url']}/")

    server = _Server(
        uvicorn.Config(
            app, log_level=log_level, access_log=log_level in ("info", "debug"), timeout_graceful_shutdown=5
        ),
        announce,
    )
    server.run(sockets=[sock])
