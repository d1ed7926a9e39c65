"""``GET /recordings/{path}``: a stored recording's own bytes, for the page to play a citation's moment.

Only a document kb transcribed as a recording is served (its metadata holds ``moments``:
:mod:`kb_core.storage.moments`; anything else is a 404), to a person allowed to read it (else a 404,
as the other document routes), and only from the document's own file, ``source_root / path``,
while it is exactly what was ingested (:func:`kb_core.commands.stored_file`: inside its folder,
the same size and SHA-256; else a 409). ``Range: bytes=…`` (one range) is answered with a 206 so
that a player can seek; a range past the end is a 416; a malformed ``Range`` is ignored (the whole
file, as RFC 9110 allows). The content type is the extension's. At most :data:`READS` files are
read at a time (each whole, to check its digest); nothing is cached.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from kb_core import Document, KnowledgeBase
from kb_serve import reading
from kb_serve.bodies import off_loop, path_param
from kb_serve.errors import ApiError, error_response
from kb_serve.page_images import source_bytes
from kb_serve.service import KbService

ROUTE = "/recordings/{path:path}"
#: Recordings read (and hashed) at once.
READS = 2
#: The content type of each extension kb-audio transcribes.
MEDIA_TYPES = {
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".m4a": "audio/mp4",
    ".ogg": "audio/ogg",
    ".oga": "audio/ogg",
    ".opus": "audio/ogg",
    ".flac": "audio/flac",
    ".mp4": "video/mp4",
    ".mkv": "video/x-matroska",
    ".webm": "video/webm",
    ".mov": "video/quicktime",
}
_RANGE = re.compile(r"bytes=([0-9]{0,19})-([0-9]{0,19})")


def find_recording(kb: KnowledgeBase, path: str) -> Document:
    """The stored recording at ``path`` the asker may read; a 404 for anything else."""
    document = reading.stored_document(kb, path)
    suffix = PurePosixPath(document.path).suffix.lower()
    if not document.metadata.get("moments") or suffix not in MEDIA_TYPES:
        raise ApiError(404, f"{document.path!r} is not a recording kb transcribed", hint="GET /documents/{path}")
    return document


class Unsatisfiable(Exception):
    """A range that asks for none of a file's bytes (a 416)."""


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The first and last byte ``header`` (``bytes=a-b``, ``bytes=a-``, ``bytes=-n``) asks of ``size`` bytes;
    None for the whole file (no header, or one this route does not read: several ranges, another unit);
    :class:`Unsatisfiable` when it asks for none of them."""
    found = _RANGE.fullmatch(header.strip()) if header else None
    if found is None or found[1] == found[2] == "":
        return None
    if found[1] == "":  # the last n bytes
        length = int(found[2])
        if length == 0 or size == 0:
            raise Unsatisfiable
        return max(0, size - length), size - 1
    first = int(found[1])
    last = min(int(found[2]), size - 1) if found[2] else size - 1
    if found[2] and int(found[2]) < first:
        return None  # (an invalid range: ignored, RFC 9110 14.1.1)
    if first >= size:
        raise Unsatisfiable
    return first, last


class Recordings:
    """The route of a recording's bytes, over one :class:`KbService`."""

    def __init__(self, service: KbService) -> None:
        self.service = service
        self.limiter = anyio.CapacityLimiter(READS)

    def routes(self) -> list[Route]:
        """The route."""
        return [Route(ROUTE, self.recording, methods=["GET"])]

    async def recording(self, request: Request) -> Response:
        """``GET /recordings/{path}``: the file's bytes (all, or the range asked for)."""
        path = path_param(request.path_params["path"], "the path")
        timeout = self.service.settings.search_timeout_s
        document = await off_loop(lambda: self.service.read(lambda kb: find_recording(kb, path)), timeout)
        media_type = MEDIA_TYPES[PurePosixPath(document.path).suffix.lower()]
        follow = self.service.config.ingest.follow_symlinks
        async with self.limiter:
            data = await off_loop(lambda: source_bytes(document, follow), timeout)
        headers = {"Accept-Ranges": "bytes", "Cache-Control": "private, no-store"}
        try:
            wanted = byte_range(request.headers.get("range"), len(data))
        except Unsatisfiable:
            message = f"the range asks for none of the recording's {len(data):,} bytes"
            return error_response(
                416, message, "ask for bytes=0- or leave Range out", {"Content-Range": f"bytes */{len(data)}"}
            )
        if wanted is None:
            return Response(data, media_type=media_type, headers=headers)
        first, last = wanted
        headers["Content-Range"] = f"bytes {first}-{last}/{len(data)}"
        return Response(data[first : last + 1], status_code=206, media_type=media_type, headers=headers)
