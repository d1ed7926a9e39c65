"""The mail parser: ``.eml`` and ``.mbox`` files as containers of messages and attachments.

Names under the file (what citations show):

- an ``.mbox`` holds one document per message, named by its Message-ID made safe for a path
  (``inbox.mbox/CAK7x-q9@mail.example.com``): a name that stays when other messages are deleted or the
  mailbox is compacted, so a stored answer's citation keeps pointing at its message. A message with no
  Message-ID is named ``sha-`` and the start of its bytes' SHA-256; the same name twice gets ``~2``, ``~3``.
- an ``.eml`` file is its message's own document (``mail.eml``);
- an attachment in a format kb reads is a document under its message (``inbox.mbox/<id>/report.pdf``,
  ``mail.eml/report.pdf``), read by the parser kb has for its extension; a forwarded message
  (``message/rfc822``) is an attachment ``<subject>.eml`` (read as one message: its own attachments are not
  expanded again).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator
from email.message import EmailMessage, Message
from email.parser import BytesHeaderParser
from pathlib import Path, PurePosixPath

from kb_core import KbError
from kb_core.bounds import MESSAGE_BYTES
from kb_core.plugin import ParsedDocument
from kb_core.plugin.containers import Part
from kb_mail.mbox import RawMessage, read_mbox
from kb_mail.render import POLICY, body_part, clean, header, parse_message, render

#: Characters of a name made from a Message-ID or an attachment's file name (past it: cut, with a hash).
NAME_CHARS = 120
_UNSAFE = re.compile(r"[^A-Za-z0-9._@+=-]+")
_UNSAFE_FILE = re.compile(r"[/\\#\x00-\x1f\x7f]+")
#: A message that may have attachments: a ``name=`` or ``filename=`` parameter somewhere (RFC 2231 too).
_MAY_ATTACH = re.compile(rb"name\*?(?:[0-9]+\*?)?\s*=", re.IGNORECASE)
MESSAGE_EXTENSION = ".eml"
#: Lines starting ``--`` (MIME boundaries) one message may have: the standard library takes about half a
#: millisecond a part, so a message of a million empty parts would take minutes. Past it, the message is skipped.
MOST_BOUNDARIES = 10_000
#: Attachments of one message kb reads (the others are left out): each is a document of its own.
MOST_ATTACHMENTS = 1000


def _cap() -> int:
    return int(MESSAGE_BYTES.high)


def _shape_problem(data: bytes) -> str:
    """Why a message is not parsed at all ('' when it is parsed): too many MIME parts."""
    if data.count(b"\n--") > MOST_BOUNDARIES:
        return f"the message has more than {MOST_BOUNDARIES:,} MIME boundary lines; skipped"
    return ""


def _too_large(size: int) -> str:
    return f"the message is {size:,} bytes, over {_cap():,} (kb_core.bounds.MESSAGE_BYTES); skipped"


def _shorten(name: str, whole: str) -> str:
    if len(name) <= NAME_CHARS:
        return name
    return name[: NAME_CHARS - 13] + "-" + hashlib.sha256(whole.encode("utf-8", "replace")).hexdigest()[:12]


def message_name(head: bytes) -> str:
    """The name of a message under its mbox: its Message-ID made safe, else a hash of its first bytes."""
    try:
        headers = BytesHeaderParser(policy=POLICY).parsebytes(head)
        raw = header(headers, "Message-ID")
    except Exception:
        raw = ""
    identity = raw.strip().strip("<>").strip()
    safe = _UNSAFE.sub("-", identity).strip("-.")
    if not safe:
        return "sha-" + hashlib.sha256(head).hexdigest()[:16]
    return _shorten(safe, identity)


def file_name(name: str, fallback: str) -> str:
    """An attachment's file name made safe for a stored path (NFC, no '/', '\\', '#' or control character)."""
    safe = _UNSAFE_FILE.sub("_", unicodedata.normalize("NFC", clean(name))).strip().lstrip(".").strip()
    if not safe:
        safe = fallback
    if len(safe) > NAME_CHARS:
        suffix = PurePosixPath(safe).suffix[:16]
        safe = _shorten(safe[: len(safe) - len(suffix)], safe)[: NAME_CHARS - len(suffix)] + suffix
    return safe


def _unique(name: str, taken: dict[str, int]) -> str:
    """``name``, or ``name~2``, ``~3``... (before its extension) when taken; ``taken`` counts each name's uses."""
    number = taken.get(name, 1)
    candidate = name
    path = PurePosixPath(name)
    while candidate in taken:
        number += 1
        candidate = f"{path.stem}~{number}{path.suffix}" if path.suffix and path.stem else f"{name}~{number}"
    taken[name] = number
    taken[candidate] = taken.get(candidate, 1)
    return candidate


def attachments(message: EmailMessage, *, decode: bool = True) -> list[tuple[str, bytes]]:
    """The attachments of ``message`` (file name, bytes), not its text: leaf parts with a file name, and
    forwarded messages, in order; a part the library cannot decode is left out. Without ``decode``, the
    names alone (the bytes are empty)."""
    body = body_part(message)
    found: list[tuple[str, bytes]] = []
    taken: dict[str, int] = {}

    def visit(part: Message) -> None:
        if part is body or len(found) >= MOST_ATTACHMENTS:
            return
        try:
            kind = part.get_content_type()
            if kind == "message/rfc822":
                inner = part.get_payload(0)
                if not isinstance(inner, Message):
                    return
                subject = header(inner, "Subject") or "forwarded"
                name = file_name(part.get_filename() or subject[:60] + MESSAGE_EXTENSION, "forwarded.eml")
                found.append((_unique(name, taken), inner.as_bytes() if decode else b""))
            elif part.is_multipart():
                for child in part.get_payload():
                    if isinstance(child, Message):
                        visit(child)
            elif part.get_filename():
                data = part.get_payload(decode=True) if decode else b""
                if isinstance(data, bytes):
                    found.append((_unique(file_name(part.get_filename() or "", "attachment"), taken), data))
        except Exception:  # a part the library cannot read: not an attachment kb can offer
            return

    visit(message)
    return found


class MailParser:
    """``.eml`` and ``.mbox`` files (a :class:`~kb_core.plugin.containers.ContainerParser`); a message's
    bytes (``parse_bytes``) as one document."""

    def parse(self, text: str, path: str) -> ParsedDocument:
        """One message from decoded text (its 8-bit bytes written back as UTF-8)."""
        return self.parse_bytes(text.encode("utf-8", "surrogateescape"), path)

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument:
        """One message; its attachments are listed in its headers (``parts`` makes them documents)."""
        if len(data) > _cap():
            raise KbError(_too_large(len(data)))
        if problem := _shape_problem(data):
            raise KbError(problem)
        try:
            message = parse_message(data)
            names = [name for name, _ in attachments(message, decode=False)] if _MAY_ATTACH.search(data) else []
            return render(message, path, names)
        except RecursionError:
            raise KbError("the message nests its parts too deeply to read; skipped") from None

    def parts(self, file: Path, path: str) -> Iterator[Part]:
        """An ``.eml``: its message and its attachments; an ``.mbox``: every message and its attachments."""
        if path.lower().endswith(".mbox"):
            total = file.stat().st_size
            taken: dict[str, int] = {}
            for raw in read_mbox(file, _cap()):
                name = _unique(message_name(raw.head or raw.data), taken)
                yield from self._message_parts(raw, name, total)
            return
        size = file.stat().st_size
        if size > _cap():
            yield Part("", b"", MESSAGE_EXTENSION, problem=_too_large(size))
            return
        with file.open("rb") as handle:
            data = handle.read(_cap() + 1)
        if len(data) > _cap():
            yield Part("", b"", MESSAGE_EXTENSION, problem=_too_large(len(data)))
            return
        yield from self._message_parts(RawMessage(data, size), "", size)

    def _message_parts(self, raw: RawMessage, name: str, total: int) -> Iterator[Part]:
        problem = raw.problem or _shape_problem(raw.data)
        if problem:
            yield Part(name, b"", MESSAGE_EXTENSION, problem=problem, done=raw.end, total=total)
            return
        yield Part(name, raw.data, MESSAGE_EXTENSION, done=raw.end, total=total)
        if not _MAY_ATTACH.search(raw.data):
            return
        try:
            found = attachments(parse_message(raw.data))
        except RecursionError:
            return
        for attachment, data in found:
            yield Part(f"{name}/{attachment}" if name else attachment, data, done=raw.end, total=total)
