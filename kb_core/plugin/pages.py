"""What a parser that shows a page of a file it reads needs (a scanned PDF page, a photo): the
:class:`PageRenderer` capability and the :class:`RenderedPage` it gives::

    from kb_core.plugin.pages import RenderedPage


    class ScanParser:  # a PageRenderer: kb serve shows its pages beside a citation
        def render_page(self, data: bytes, path: str, page: int, *, max_side: int) -> RenderedPage:
            png, width, height = draw(data, page, max_side)  # within the parser's own limits
            return RenderedPage(png, "image/png", width, height)

``kb serve`` finds the parser that read a document by the document's ``parser`` name in the registry
and calls it in a child process for ``GET /documents/{path}/pages/{n}.png``.
"""

from kb_core.extend.contracts import PageRenderer, RenderedPage

__all__ = ["PageRenderer", "RenderedPage"]
