"""A page image is rendered by the document's own parser (a ``PageRenderer`` found in the registry), so
kb-serve holds no image format list, pixel limit or decoder of its own: it serves what any parser
renders, a 404 for a document whose parser renders no pages, a 422 with the parser's own reason.

``Sketch`` is a parser of ``.sketch`` files (text) that says OCR read one page; ``SketchRenderer``
renders that page as a JPEG. The child process that renders imports this module to unpickle it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import kb_core
from kb_core import KbError
from kb_core.plugin import Block, ParsedDocument, RegisterParser, hookimpl
from kb_core.plugin.pages import RenderedPage
from kb_serve.page_images import MAX_SIDE

KB_SERVE = Path(__file__).resolve().parents[1] / "kb_serve"
#: A JPEG's first bytes and a made-up rest: kb-serve must pass on whatever its parser renders, as it is.
JPEG = b"\xff\xd8\xff\xe0 a sketch \xff\xd9"


class Sketch:
    """A parser whose documents say OCR read their page 1 (and no renderer)."""

    def parse(self, text: str, path: str) -> ParsedDocument:
        ocr = {"engine": "sketch", "pages": [[1, 40, 30]], "lines": []}
        return ParsedDocument(path, (Block(text.strip() or "empty", 1, 1, verbatim=True),), {"ocr": ocr})


class SketchRenderer(Sketch):
    """The same parser, rendering its page (a page it lacks, or a file saying ``refuse``, is a KbError)."""

    def render_page(self, data: bytes, path: str, page: int, *, max_side: int) -> RenderedPage:
        if b"refuse" in data:
            raise KbError("the sketch is over the limit of 3 strokes", hint="raise [backends.sketch] strokes")
        assert max_side == MAX_SIDE and path.endswith(".sketch") and page == 1
        return RenderedPage(JPEG, "image/jpeg", 40, 30)


class SketchPlugin:
    def __init__(self, parser: type[Sketch]) -> None:
        self.parser = parser

    @hookimpl
    def register_parsers(self, register: RegisterParser) -> None:
        register("sketch", lambda ctx: self.parser(), extensions=(".sketch",))


def serve_sketches(start_server: Callable[..., Any], tmp_path: Path, parser: type[Sketch]) -> Any:
    folder = tmp_path / "sketches"
    folder.mkdir()
    (folder / "heron.sketch").write_text("A heron, standing.\n")
    (folder / "refused.sketch").write_text("refuse\n")
    server = start_server(plugins=[("sketch", SketchPlugin(parser))])
    report = server.app.state.service.write(lambda kb: kb_core.ingest_paths(kb, [folder]))
    assert sorted(report.added) == ["heron.sketch", "refused.sketch"], report.failed
    return server


def test_the_route_serves_what_the_documents_parser_renders(start_server: Callable[..., Any], tmp_path: Path) -> None:
    server = serve_sketches(start_server, tmp_path, SketchRenderer)
    with server.client() as http:
        reply = http.get("/documents/heron.sketch/pages/1.png")
        assert reply.status_code == 200, reply.text
        assert reply.content == JPEG and reply.headers["content-type"] == "image/jpeg"  # (the parser's, as it is)
        assert reply.headers["cache-control"] == "private, no-store"
        refused = http.get("/documents/refused.sketch/pages/1.png")
        assert refused.status_code == 422
        body = refused.json()
        assert body["error"] == "cannot show page 1 of 'refused.sketch': the sketch is over the limit of 3 strokes"
        assert body.get("hint") == "raise [backends.sketch] strokes", body


def test_a_document_whose_parser_renders_no_pages_has_none(start_server: Callable[..., Any], tmp_path: Path) -> None:
    server = serve_sketches(start_server, tmp_path, Sketch)
    with server.client() as http:
        reply = http.get("/documents/heron.sketch/pages/1.png")
        assert reply.status_code == 404
        assert reply.json()["error"] == "'heron.sketch' has no page images: its parser 'sketch' does not render pages"


def test_a_document_whose_parser_is_gone_is_a_422(start_server: Callable[..., Any], tmp_path: Path) -> None:
    server = serve_sketches(start_server, tmp_path, SketchRenderer)
    del server.app.state.service.registry.items["parsers"]["sketch"]  # (as if its plugin were uninstalled)
    with server.client() as http:
        reply = http.get("/documents/heron.sketch/pages/1.png")
        assert reply.status_code == 422
        assert reply.json()["error"].startswith("cannot show page 1 of 'heron.sketch': no parser named 'sketch'")


def _kb_serve_sources() -> list[Path]:
    sources = sorted(KB_SERVE.rglob("*.py"))
    assert len(sources) > 10 and KB_SERVE / "page_images.py" in sources
    return sources


@pytest.mark.parametrize("source", _kb_serve_sources(), ids=lambda path: path.name)
def test_kb_serve_imports_no_image_library(source: Path) -> None:
    imported = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & {"PIL", "pypdfium2", "kb_documents"}, f"{source.name} decodes images itself"


def test_kb_serve_holds_no_image_formats_or_pixel_limit() -> None:
    held = re.compile(r"max_ocr_pixels|MAX_IMAGE_PIXELS|\"(?:PNG|JPEG|TIFF|WEBP)\"|\.(?:tiff?|jpe?g|webp|bmp)\b", re.I)
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in _kb_serve_sources()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if held.search(line)
    ]
    assert found == []


def test_a_stored_document_of_a_missing_file_fails_before_its_renderer_is_asked(
    start_server: Callable[..., Any], tmp_path: Path
) -> None:
    server = serve_sketches(start_server, tmp_path, SketchRenderer)
    (tmp_path / "sketches" / "heron.sketch").unlink()
    with server.client() as http:
        reply = http.get("/documents/heron.sketch/pages/1.png")
    assert reply.status_code == 404 and "is gone from its folder" in reply.json()["error"]
