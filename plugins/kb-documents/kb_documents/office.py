"""What the zip-based formats (.docx, .xlsx, .pptx, OpenDocument, .epub) share: zip-bomb checks and safe reads.

Before a part is inflated, :func:`check_archive` checks the archive as its central directory
declares it: the member count (``max_docx_entries``), the main part's presence, encrypted parts,
and each part kb reads for its compression ratio (``max_docx_ratio``) and their total size
(``max_docx_inflated_bytes``). zipfile never inflates a member past its declared size, and
:class:`Parts` reads each one with a bound besides, so these declared sizes bound what reading
costs. :func:`parse_xml` parses a part without expanding entities, and :func:`damaged` turns any
other failure of a reader into one line.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable, Collection
from typing import TypeVar
from xml.etree import ElementTree
from xml.etree.ElementTree import Element, ParseError

import defusedxml
import defusedxml.ElementTree as SafeET

from kb_core import KbError
from kb_documents.limits import Limits

#: Word and Excel encrypt a file into an OLE container (an old .doc or .xls file is one too).
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
BOMB_HINT = "it may be a zip bomb; if you trust it, raise the [backends.documents] limits"
_XML_ENCODING = re.compile(rb"\s*<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._-]+)[\"']")
T = TypeVar("T")


def open_zip(data: bytes, kind: str, hint: str) -> zipfile.ZipFile:
    """``data`` as a zip archive, or ``not a valid {kind}`` in one line."""
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, NotImplementedError, ValueError, OSError, EOFError):  # a damaged directory
        raise KbError(f"not a valid {kind} (not a zip archive; truncated or another format?)", hint=hint) from None


def check_archive(
    archive: zipfile.ZipFile,
    limits: Limits,
    kind: str,
    *,
    main: str,
    missing: str,
    missing_hint: str,
    parts: Collection[str] | Callable[[str], bool] | None = None,
) -> dict[str, zipfile.ZipInfo]:
    """The members kb reads (``parts``: names, a test of a name, or None for every member) by name,
    once the archive passes the limits.

    ``kind`` names the format in messages (``.docx``); an archive without its ``main`` part is
    ``not {missing} (the archive has no {main})``. Every problem is a one-line KbError.
    """
    infos = archive.infolist()
    if len(infos) > limits.max_docx_entries:
        raise KbError(f"the {kind} has {len(infos)} parts, over the limit of {limits.max_docx_entries}", hint=BOMB_HINT)
    if main not in {info.filename for info in infos}:
        raise KbError(f"not {missing} (the archive has no {main})", hint=missing_hint)
    wanted: Callable[[str], bool] = (
        (lambda _name: True) if parts is None else parts if callable(parts) else (lambda name: name in parts)
    )
    read = {info.filename: info for info in infos if wanted(info.filename)}
    total = 0
    for info in read.values():
        if info.flag_bits & 0x1:
            raise KbError(
                f"the {kind} is password protected ({info.filename} is encrypted)",
                hint=f"save an unprotected copy as {kind} and ingest that",
            )
        ratio = info.file_size / max(info.compress_size, 1)
        if ratio > limits.max_docx_ratio:
            raise KbError(
                f"{info.filename} in the {kind} would inflate {ratio:.0f} times "
                f"({info.file_size} bytes), over the limit of {limits.max_docx_ratio}",
                hint=BOMB_HINT,
            )
        total += info.file_size
    if total > limits.max_docx_inflated_bytes:
        raise KbError(
            f"the {kind} would inflate to {total} bytes, over the limit of {limits.max_docx_inflated_bytes}",
            hint=BOMB_HINT,
        )
    return read


def bounded_read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, kind: str) -> bytes:
    """The member's bytes, or a KbError when it inflates past ``limit`` (whatever its header declares)."""
    with archive.open(info) as member:
        data = member.read(limit + 1)
    if len(data) > limit:
        raise KbError(f"{info.filename} in the {kind} inflates past {limit} bytes", hint=BOMB_HINT)
    return data


def _plain_utf8(data: bytes) -> bool:
    """UTF-8 (or ASCII) XML without a DTD: nothing for an entity attack to hide in (as Word writes every part)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if data[:4].count(0) or data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    declared = _XML_ENCODING.match(data[:256])
    if declared and declared.group(1).lower() not in (b"utf-8", b"utf8", b"us-ascii", b"ascii"):
        return False
    return b"<!DOCTYPE" not in data and b"<!ENTITY" not in data


def parse_xml(
    data: bytes, name: str, kind: str, hint: str = "open and save it again in the program that made it"
) -> Element:
    """Parse one part: plain UTF-8 without a DTD through the C parser, anything else through defusedxml
    (which refuses entities and DTDs); a KbError naming the part otherwise."""
    try:
        if _plain_utf8(data):
            return ElementTree.fromstring(data)
        return SafeET.fromstring(data)
    except defusedxml.DefusedXmlException as exc:
        raise KbError(
            f"{name} in the {kind} uses XML entities or a DTD, which kb refuses ({type(exc).__name__})", hint=hint
        ) from None
    except ParseError as exc:
        raise KbError(f"{name} in the {kind} is not well-formed XML ({exc})", hint=hint) from None


class Parts:
    """Reads the checked members of an archive, all of them together within ``budget`` bytes."""

    def __init__(self, archive: zipfile.ZipFile, infos: dict[str, zipfile.ZipInfo], budget: int, kind: str) -> None:
        self.archive, self.infos, self.budget, self.kind = archive, infos, budget, kind

    def __contains__(self, name: object) -> bool:
        return name in self.infos

    def read(self, name: str) -> bytes | None:
        """The part's bytes (None: the archive has no such checked part)."""
        info = self.infos.get(name)
        if info is None:
            return None
        data = bounded_read(self.archive, info, self.budget, self.kind)
        self.budget -= len(data)
        return data

    def xml(self, name: str, hint: str = "open and save it again in the program that made it") -> Element | None:
        """The part parsed as XML (None: no such part)."""
        data = self.read(name)
        return None if data is None else parse_xml(data, name, self.kind, hint)


def damaged(kind: str, hint: str, parse: Callable[[], T]) -> T:
    """``parse()``, any failure but a KbError turned into ``the {kind} is damaged and cannot be read (...)``."""
    try:
        return parse()
    except KbError:
        raise
    except Exception as exc:  # noqa: BLE001 - zipfile, zlib and the readers raise many types on damaged files
        message = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        raise KbError(f"the {kind} is damaged and cannot be read ({message})", hint=hint) from None
