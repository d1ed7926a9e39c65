"""What a parser of files that hold documents of their own needs (an mbox of messages, a message with
attachments, a zip, an EPUB): the :class:`ContainerParser` capability, its :class:`Part`, and the core's
HTML and plain-text parsers for parts written in them (an HTML mail, an EPUB chapter, a mail body)::

    from collections.abc import Iterator
    from pathlib import Path

    from kb_core.plugin.containers import Part


    class ZipParser:  # a ContainerParser: each member kb reads becomes a document under the zip
        def parts(self, file: Path, path: str) -> Iterator[Part]:
            with zipfile.ZipFile(file) as archive:
                for member in archive.infolist():
                    yield Part(member.filename, archive.read(member))  # parsed by the parser for its extension

The ingester stores each part at ``<path>/<name>``, skips an unchanged file by its hash, and removes
the parts the file no longer holds (:mod:`kb_core.ingest.containers`).
"""

from kb_core.builtin.parsers.html import HtmlParser
from kb_core.builtin.parsers.text import TextParser
from kb_core.extend.containers import ContainerParser, Part

__all__ = ["ContainerParser", "HtmlParser", "Part", "TextParser"]
