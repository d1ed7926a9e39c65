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
memory. The image is made anew by the document's own parser, a :class:`kb_core.plugin.pages.PageRenderer`
found in the registry by the parser's name (kb-documents' ``pdf`` and ``image``, within their own
limits), in a child process (:mod:`kb_serve.render`: pdfium must not run in two threads at once, and
an upload may be parsing a PDF in this process), never the file's own bytes, and not cached
(``Cache-Control: private, no-store``): the next ingest may change it. A document whose parser does
not render pages has no page images (a 404); one whose parser is no longer installed, a 422.

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

from kb_core import Document, KbError, KnowledgeBase, NotFoundError
from kb_core.bounds import PAGE
from kb_core.commands import stored_file
from kb_core.plugin import ParserContext
from kb_core.plugin.pages import PageRenderer, RenderedPage
from kb_serve import reading, render
from kb_serve.bodies import json_response, off_loop, path_param
from kb_serve.errors import ApiError
from kb_serve.service import KbService

#: ``{page}`` is read here, not by Starlette's ``int`` convertor (whose ``int()`` of 4,301 digits raised a 500).
ROUTE = "/documents/{path:path}/pages/{page}.png"
#: Pages rendered at once (each in its own process).
RENDERS = 2
#: The long side of a page image, in pixels (the parser renders it at most this large).
MAX_SIDE = 1600


def find_page(kb: KnowledgeBase, path: str, page: int) -> Document:
    """The document at ``path`` when OCR read its page ``page``; a 404 otherwise."""
    document = reading.stored_document(kb, path)
    name = document.path
    pages = reading.ocr_pages(document.metadata)
    if not pages:
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
        self.limiter = anyio.CapacityLimiter(RENDERS)
        self._parsers: dict[str, object] = {}

    def renderer(self, document: Document, page: int) -> PageRenderer:
        """The parser that read ``document``, from the registry (made once per name), when it renders pages:
        a 404 when it does not, a 422 when it is not installed or cannot be made."""
        name = document.parser
        if name not in self._parsers:
            try:
                factory = self.service.registry.get("parsers", name).factory
                self._parsers[name] = factory(ParserContext(self.service.config))
            except KbError as exc:
                raise ApiError(
                    422, f"cannot show page {page} of {document.path!r}: {exc.message}", hint=exc.hint
                ) from None
        parser = self._parsers[name]
        if not isinstance(parser, PageRenderer):
            raise ApiError(404, f"{document.path!r} has no page images: its parser {name!r} does not render pages")
        return parser

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
        parser = await off_loop(lambda: self.renderer(found, page), timeout)  # (may import the parser's module)
        follow = self.service.config.ingest.follow_symlinks
        async with self.limiter:  # (before the file is read: a request waiting here holds none of it)
            data = await off_loop(lambda: source_bytes(found, follow), timeout)
            shown = await self._render(parser, found, page, data, timeout)
        return Response(shown.data, media_type=shown.media_type, headers={"Cache-Control": "private, no-store"})

    async def _render(
        self, parser: PageRenderer, document: Document, page: int, data: bytes, timeout: float
    ) -> RenderedPage:
        """The image ``parser`` renders of the page, in a child process (:mod:`kb_serve.render`); a 422
        with the parser's reason when it fails, a 504 after ``timeout``. The caller holds :attr:`limiter`."""
        if not sys.executable:
            raise ApiError(422, "cannot render a page: no Python interpreter to run the renderer with")
        command = [sys.executable, "-I", str(Path(render.__file__))]
        sent = render.request(parser, document.path, page, MAX_SIDE, data)
        try:
            with anyio.fail_after(timeout):
                result = await anyio.run_process(command, input=sent, check=False)
        except TimeoutError:
            raise ApiError(504, f"rendering page {page} took longer than {timeout:g} s") from None
        shown = render.reply(result.stdout) if result.returncode == 0 else None
        if shown is None:
            lines = result.stderr.decode("utf-8", "replace").strip().splitlines()
            if result.returncode != render.FAILED:  # (not the renderer's own failure: its last words)
                lines = [lines[-1] if lines else f"the renderer stopped (status {result.returncode})"]
            reason = lines[0] if lines else "the renderer gave no image"
            raise ApiError(422, f"cannot show page {page} of {document.path!r}: {reason}", hint=" ".join(lines[1:2]))
        return shown
