"""The browser page: static files from ``kb_serve/page/``, and the security headers of every response.

The page is plain HTML, CSS and ES modules shipped in the package (no build step, nothing fetched
from elsewhere). The files are read once, when the app is made, into an allow-list: a request
names one of them or gets a 404, so no request can reach another file. ``/`` is ``index.html``;
the rest is under ``/page/``. One asset is made here, not read: ``/page/js/words.js``, kb_core's words
about an answer (:func:`kb_core.service.words.page_words`), so the page says answers as every
front end does and holds no wording of its own. The page and its assets are the only paths served without the
bearer token (they hold no data; the page asks for the token before it calls the API).

Every response (the API's JSON too) carries ``X-Content-Type-Options: nosniff``,
``Referrer-Policy: no-referrer`` and ``Cross-Origin-Resource-Policy: same-origin``; the page
and its assets carry the strict :data:`PAGE_CSP`, every other response :data:`API_CSP` (a JSON
body opened in a tab runs nothing).
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from importlib.abc import Traversable

import attrs
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kb_core.service import words
from kb_serve.errors import ApiError

PAGE_CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",  # blob: the page images the page fetched (with the token)
        "media-src 'self' blob:",  # blob: the recordings the page fetched (with the token), to play a moment
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'self'",
    )
)
API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cross-origin-resource-policy": "same-origin",
}
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
#: Where the page's assets are served.
PREFIX = "/page/"
#: The module of the page that holds kb's words about an answer (made from kb_core's).
WORDS_MODULE = PREFIX + "js/words.js"


@attrs.frozen
class Asset:
    """One file of the page: its bytes, media type and entity tag."""

    body: bytes
    media_type: str
    etag: str


def _walk(folder: Traversable, prefix: str) -> dict[str, Traversable]:
    found: dict[str, Traversable] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            found.update(_walk(entry, f"{prefix}{entry.name}/"))
        elif any(entry.name.endswith(suffix) for suffix in MEDIA_TYPES):
            found[prefix + entry.name] = entry
    return found


def load_assets() -> dict[str, Asset]:
    """Every file of ``kb_serve/page`` by the URL path it is served at (``/`` for ``index.html``)."""
    assets: dict[str, Asset] = {}
    for name, entry in _walk(resources.files("kb_serve").joinpath("page"), "").items():
        body = entry.read_bytes()
        media_type = MEDIA_TYPES["." + name.rsplit(".", 1)[1]]
        assets["/" if name == "index.html" else PREFIX + name] = _asset(body, media_type)
    said = json.dumps(words.page_words(), ensure_ascii=False, indent=1)
    words_js = f"// kb's words about an answer, from kb_core.service.words.\nexport const PAGE_WORDS = {said};\n"
    assets[WORDS_MODULE] = _asset(words_js.encode(), MEDIA_TYPES[".js"])
    return assets


def _asset(body: bytes, media_type: str) -> Asset:
    return Asset(body, media_type, '"' + hashlib.sha256(body).hexdigest()[:20] + '"')


def is_public(method: str, path: str) -> bool:
    """Whether a request reads the page or one of its assets (served without the bearer token)."""
    return method in ("GET", "HEAD") and (path == "/" or path.startswith(PREFIX))


class PageFiles:
    """The route handler of ``/`` and ``/page/...``."""

    def __init__(self) -> None:
        self.assets = load_assets()

    async def serve(self, request: Request) -> Response:
        """The file, 304 when the browser has it already, or a 404."""
        asset = self.assets.get(request.url.path)
        if asset is None:
            raise ApiError(404, "no such file of the page", hint="open / for the page")
        headers = {"ETag": asset.etag, "Cache-Control": "no-cache", "Content-Security-Policy": PAGE_CSP}
        if request.headers.get("if-none-match") == asset.etag:
            return Response(status_code=304, headers=headers)
        return Response(asset.body, media_type=asset.media_type, headers=headers)


class SecurityHeaders:
    """Pure ASGI middleware: the security headers on every HTTP response (see the module's docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
                headers.setdefault("content-security-policy", API_CSP)
            await send(message)

        await self.app(scope, receive, send_with_headers)
