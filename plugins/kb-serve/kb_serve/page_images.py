"""``GET /documents/{path}/pages/{page}.png``: a page of a document OCR read (a scanned PDF page, an
image file), as a PNG, for the page to show a citation's region on it.

Only a page OCR read is served (``metadata["ocr"]["pages"]``; anything else is a 404), and only from
the document's own file, ``source_root / path``, checked before a byte of it is used (by
:func:`kb_core.commands.stored_file`):

* it must lie inside the folder it was ingested from once links are followed (unless ``[ingest]
  follow_symlinks`` is on, as kb ingest would follow them), else a 409;
* it must exist (404), and hold exactly what was ingested: the same size and SHA-256 as the stored
  ``content_hash``, else a 409 (``changed since it was ingested; run kb ingest``), so the page image
  always matches the stored text and its boxes.

The file is opened without blocking (a FIFO or a device put there since is refused, never waited
on), and read no further than its ingested size. At most two pages are read and rendered at a time:
the file is read and hashed only once a render's turn has come, so waiting requests hold no file in
memory. The PNG is made anew by :mod:`kb_serve.render` in a child process (pdfium must not run in two
threads at once, and an upload may be parsing a PDF in this process), never the file's own bytes,
and not cached (``Cache-Control: private, no-store``): the next ingest may change it.

A stored document whose own path ends in ``/pages/N.png`` (an image file in a folder named ``pages``)
keeps its text at this address: its path wins, and its page images are ``.../pages/N.png/pages/1.png``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from kb_core import Config, Document, KbError, KnowledgeBase, NotFoundError
from kb_core.bounds import PAGE
from kb_core.commands import stored_file
from kb_serve import reading, render
from kb_serve.bodies import json_response, off_loop, path_param
from kb_serve.errors import ApiError
from kb_serve.service import KbService

#: ``{page}`` is read here, not by Starlette's ``int`` convertor (whose ``int()`` of 4,301 digits raised a 500).
ROUTE = "/documents/{path:path}/pages/{page}.png"
#: Pages rendered at once (each in its own process).
RENDERS = 2
#: kb-documents' own default ``max_ocr_pixels``: an image file's pixels at most, unless configured.
DEFAULT_MAX_PIXELS = 40_000_000
KINDS = ("pdf", "image")


def max_ocr_pixels(config: Config) -> int:
    """kb-documents' ``[backends.documents] max_ocr_pixels``: the largest image file it reads by OCR.

    Read from the configuration (kb-documents' module is that plugin's own); its default when the
    key is absent or not a positive integer (kb-documents refuses such a value when it ingests)."""
    value = config.backend_options("documents").get("max_ocr_pixels", DEFAULT_MAX_PIXELS)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return DEFAULT_MAX_PIXELS
    return value


def find_page(kb: KnowledgeBase, path: str, page: int) -> Document:
    """The document at ``path`` when OCR read its page ``page`` (a ``pdf`` or an ``image``); a 404 otherwise."""
    document = reading.stored_document(kb, path)
    name = document.path
    pages = reading.ocr_pages(document.metadata)
    if not pages or document.metadata.get("format") not in KINDS:
        raise ApiError(404, f"{name!r} was not read by OCR: it has no page images", hint="GET /documents/{path}")
    if page not in pages:
        numbers = ", ".join(str(n) for n in sorted(pages)[:20])
        raise ApiError(404, f"{name!r} has no page {page} read by OCR (pages: {numbers})")
    return document


def source_bytes(document: Document, follow_symlinks: bool = False) -> bytes:
    """The bytes of ``document``'s file, exactly as they were ingested (:func:`kb_core.commands.stored_file`):
    a 404 when the file or its folder is gone, a 409 when it changed, leads outside its folder or cannot be read."""
    try:
        return stored_file(document, follow_symlinks=follow_symlinks)
    except NotFoundError as exc:
        raise ApiError(404, exc.message, hint=exc.hint) from None
    except KbError as exc:
        raise ApiError(409, exc.message, hint=exc.hint) from None


def page_number(path: str, written: str, missing: ApiError) -> int:
    """The page number ``written`` in the address of a page image of ``path`` (ASCII digits, in
    :data:`kb_core.bounds.PAGE`, read without ``int()`` of a long string); ``missing`` (the 404 of a
    document at the whole path) when it is no number, a 404 naming it and the bound when it is out of it."""
    if not (written.isascii() and written.isdigit()):
        raise missing
    digits = written.lstrip("0") or "0"
    if len(digits) > len(str(int(PAGE.high))):
        shown = f"{digits[:12]}… ({len(digits):,} digits)"
    elif PAGE.holds(int(digits)):
        return int(digits)
    else:
        shown = digits
    raise ApiError(404, f"{path[:80]!r} has no page {shown}: a page is {PAGE.allowed}")


class PageImages:
    """The route of a page image, over one :class:`KbService`."""

    def __init__(self, service: KbService) -> None:
        self.service = service
        self.max_pixels = max_ocr_pixels(service.config)
        self.limiter = anyio.CapacityLimiter(RENDERS)

    def routes(self) -> list[Route]:
        """The route (before ``/documents/{path}``, which would take its path)."""
        return [Route(ROUTE, self.page_image, methods=["GET"])]

    async def page_image(self, request: Request) -> Response:
        """``GET /documents/{path}/pages/{page}.png``: the page as a PNG, or a stored document of that very path."""
        path = path_param(request.path_params["path"], "the path")
        written = path_param(request.path_params["page"], "the page")  # (as written: "01")
        whole = path_param(f"{path}/pages/{written}.png", "the path")
        timeout = self.service.settings.search_timeout_s

        def find(kb: KnowledgeBase) -> tuple[int, Document] | dict[str, Any]:
            try:
                document = reading.stored_document(kb, whole)
            except ApiError as missing:  # (no document of that very path: a page of the document at ``path``)
                page = page_number(path, written, missing)
                return page, find_page(kb, path, page)
            return reading.text_of(kb, document)

        read = await off_loop(lambda: self.service.read(find), timeout)
        if isinstance(read, dict):
            return json_response("document_text.v1", read)
        page, found = read
        follow = self.service.config.ingest.follow_symlinks
        async with self.limiter:  # (before the file is read: a request waiting here holds none of it)
            data = await off_loop(lambda: source_bytes(found, follow), timeout)
            png = await self._render(found, page, data, timeout)
        return Response(png, media_type="image/png", headers={"Cache-Control": "private, no-store"})

    async def _render(self, document: Document, page: int, data: bytes, timeout: float) -> bytes:
        """The PNG :mod:`kb_serve.render` makes of the page (of a ``pdf`` or an ``image``, as
        :func:`find_page` checked), in a child process; a 422 with its reason when it fails, a 504 after ``timeout``.

        The caller holds :attr:`limiter`."""
        if not sys.executable:
            raise ApiError(422, "cannot render a page: no Python interpreter to run the renderer with")
        kind = str(document.metadata["format"])
        command = [sys.executable, "-I", str(Path(render.__file__)), kind, str(page), str(self.max_pixels)]
        try:
            with anyio.fail_after(timeout):
                result = await anyio.run_process(command, input=data, check=False)
        except TimeoutError:
            raise ApiError(504, f"rendering page {page} took longer than {timeout:g} s") from None
        if result.returncode != 0 or not result.stdout.startswith(b"\x89PNG"):
            lines = result.stderr.decode("utf-8", "replace").strip().splitlines() or [f"status {result.returncode}"]
            raise ApiError(
                422,
                f"cannot show page {page} of {document.path!r}: {lines[-1]}",
                hint="kb-documents (Pillow, pypdfium2) renders the page; check that it is installed",
            )
        return result.stdout
