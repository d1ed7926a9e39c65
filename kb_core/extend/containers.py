"""An optional Parser capability: a file that holds documents of its own (an mbox of messages, a message with
attachments; later a zip or an EPUB), which the ingester stores one document per part.

A :class:`ContainerParser` streams its file's :class:`Part` objects; the ingester names each part under the
file (``inbox.mbox/<name>``), hashes it, skips it when unchanged, and parses it with the registry's parser for
its extension. See :mod:`kb_core.ingest.containers` for what the ingester does with them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

import attrs


@attrs.frozen
class Part:
    """One document inside a container file.

    ``name`` is its path under the container (``"<id>"``, ``"<id>/report.pdf"``; '/'-separated, no '.' or
    '..' part); ``""`` is the container's own text (an ``.eml`` file's message). ``data`` is its bytes,
    parsed by the registry's parser for ``extension`` (``".eml"``), or for the name's own extension when
    ``extension`` is empty. A part the container could not read has a ``problem``: its one-line reason (its
    ``data`` is then empty); it is reported, and a stored earlier version of it is kept. ``done`` of
    ``total`` is how far through the file this part ends (bytes, say), for the ingest's progress.
    """

    name: str
    data: bytes = attrs.field(repr=lambda data: f"<{len(data)} bytes>")
    extension: str = ""
    problem: str = ""
    done: int = 0
    total: int = 0


@runtime_checkable
class ContainerParser(Protocol):
    """An optional Parser capability: the documents inside one file, streamed.

    ``parts(file, path)`` reads the file at ``file`` on disk (stored as ``path``) as it goes, never whole,
    and yields its parts in a stable order; the same name twice is an error of the container. A file it
    cannot read at all is a :class:`~kb_core.errors.KbError` of one line (then nothing stored under it is
    removed). Each part is held to the container's own bounds; a part that another parser reads (an
    attachment) is held to ``[ingest] max_file_bytes`` as a file is, by the ingester.
    """

    def parts(self, file: Path, path: str) -> Iterator[Part]: ...
