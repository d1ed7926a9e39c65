"""A page of a document as an image to show, rendered by the document's own parser in a child process.

``GET /documents/{path}/pages/{page}.png`` (:mod:`kb_serve.page_images`) runs this file as a script,
``python -I render.py``, writes a :func:`request` to its stdin and reads a :func:`reply` from its
stdout. The parser (a :class:`kb_core.plugin.pages.PageRenderer` from the registry, pickled) decodes and
renders the page within its own limits (kb-documents: the image formats it reads, its pixel limit, a
photo decoded smaller): this module holds no image format, limit or decoder of its own. A process of its own,
because a renderer's library may not be called from two threads at once (pdfium: an upload's ingest
may be parsing a PDF in the server), and so that a crash or a page image's pixels never stay in the
server's memory.

* stdin: one line of JSON (the server's ``sys.path``, the document's path, the page, the long side,
  the pickle's length), the pickled parser, then the file's bytes;
* stdout: one line of JSON (the image's media type and size), then its bytes;
* a failure: exit status :data:`FAILED`, the KbError's message on stderr and its hint on a second line.
"""

from __future__ import annotations

import json
import pickle
import sys
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from kb_core.plugin.pages import RenderedPage

FAILED = 2


def request(parser: Any, path: str, page: int, max_side: int, data: bytes) -> bytes:
    """What the child reads: the page to render and the renderer, then the file's bytes."""
    pickled = pickle.dumps(parser)
    head = {"sys_path": sys.path, "path": path, "page": page, "max_side": max_side, "pickled": len(pickled)}
    return json.dumps(head).encode() + b"\n" + pickled + data


def reply(out: bytes) -> RenderedPage | None:
    """The image the child wrote on its stdout; None when it wrote none."""
    from kb_core.plugin.pages import RenderedPage

    head, _, data = out.partition(b"\n")
    try:
        shown = json.loads(head)
        media_type, width, height = str(shown["media_type"]), int(shown["width"]), int(shown["height"])
    except (ValueError, TypeError, KeyError):
        return None
    return RenderedPage(data, media_type, width, height) if media_type.startswith("image/") and data else None


def _render(stdin: BinaryIO, stdout: BinaryIO) -> None:
    head = json.loads(stdin.readline())
    sys.path[:] = [entry for entry in head["sys_path"] if isinstance(entry, str)]  # (what the server imports)
    from kb_core.plugin.pages import PageRenderer

    parser = pickle.loads(stdin.read(int(head["pickled"])))  # noqa: S301 - written by the server that started us
    if not isinstance(parser, PageRenderer):
        raise TypeError(f"{type(parser).__name__} does not render pages")
    page = parser.render_page(stdin.read(), str(head["path"]), int(head["page"]), max_side=int(head["max_side"]))
    shown = {"media_type": page.media_type, "width": page.width, "height": page.height}
    stdout.write(json.dumps(shown).encode() + b"\n" + page.data)


def _why(exc: Exception) -> tuple[str, str]:
    """The parser's KbError as its message and hint; anything else named, in one line."""
    errors = sys.modules.get("kb_core.errors")
    if errors is not None and isinstance(exc, errors.KbError):
        return exc.message, exc.hint or ""
    return f"the renderer failed ({type(exc).__name__}: {exc})", ""


def _failed(message: str, hint: str = "") -> int:
    print(" ".join(message.split())[:400], file=sys.stderr)
    if hint:
        print(" ".join(hint.split())[:400], file=sys.stderr)
    return FAILED


def main() -> int:
    """Render the page :func:`request` asked for on stdin, onto stdout; a failure in one or two lines on stderr."""
    try:
        _render(sys.stdin.buffer, sys.stdout.buffer)
    except ImportError as exc:
        return _failed(f"{exc.name or 'the renderer'} is not installed", "install the plugin that read the document")
    except Exception as exc:  # noqa: BLE001 - a KbError is the parser's one line; anything else, named
        return _failed(*_why(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
