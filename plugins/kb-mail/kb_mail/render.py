"""One mail message as a document: its headers, then its text, one line of the document per line shown.

The document's text is what kb shows and cites (``inbox.mbox/<id>#L6-L9``)::

    From: Alice Example <alice@example.com>
    To: Bob <bob@example.com>
    Date: Tue, 05 Mar 2024 10:00:00 +0000
    Subject: Pump maintenance
    Attachments: report.pdf

    The body, plain text (or the HTML part read as text), without quoted replies.

Every block carries the heading "Subject — From, Date", so a passage from the middle of a long message is
still shown with whom it came from and when. Nothing here raises on any message: an unknown charset, a
broken MIME structure or an over-long header is read as well as it can be, with a one-line warning.
"""

from __future__ import annotations

import codecs
import email
import email.policy
import email.utils
import re
import unicodedata
from email.message import EmailMessage, Message
from email.policy import EmailPolicy
from typing import Any

import attrs

from kb_core.plugin import Block, ParsedDocument
from kb_core.plugin.containers import HtmlParser, TextParser
from kb_mail.quotes import drop_html_quotes, drop_quotes, drop_trailing_attribution

#: Characters of one header kb reads (a header of megabytes is cut, with a warning).
HEADER_CHARS = 2000
#: Characters of a header shown in the document (a To: with 500 addresses is cut).
SHOWN_HEADER_CHARS = 400
SHOWN = ("From", "To", "Date", "Subject")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SPACES = re.compile(r"\s+")


def clean(text: str) -> str:
    """``text`` as valid UTF-8 (raw 8-bit bytes read as UTF-8, else replaced), without control characters."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return _CONTROLS.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


class BoundedPolicy(EmailPolicy):
    """``email.policy.default``, each header cut at :data:`HEADER_CHARS` before the library parses it: its
    parser of structured headers takes minutes on a Content-Type of a million characters (measured: 273 s for
    200,000 parameters)."""

    def header_fetch_parse(self, name: str, value: str) -> Any:
        """The header's value as ``email.policy.default`` gives it, from its first HEADER_CHARS characters."""
        return super().header_fetch_parse(name, value[:HEADER_CHARS])


#: The policy kb reads mail with.
POLICY = BoundedPolicy()


def parse_message(data: bytes) -> EmailMessage:
    """The message in ``data`` (the standard library's parser, ``email.policy.default`` with headers bounded)."""
    message = email.message_from_bytes(data, policy=POLICY)
    assert isinstance(message, EmailMessage)
    return message


def header(message: Message, name: str, warnings: list[str] | None = None) -> str:
    """The decoded value of header ``name`` on one line ('' when absent), cut at :data:`HEADER_CHARS`."""
    try:
        raw = next((str(v) for k, v in message.raw_items() if k.lower() == name.lower()), None)
    except Exception:
        return ""
    if raw is None:
        return ""
    if len(raw) > HEADER_CHARS and warnings is not None:
        warnings.append(f"the {name} header is {len(raw):,} characters long; read its first {HEADER_CHARS:,}")
    raw = raw[:HEADER_CHARS]
    try:
        value = str(email.policy.default.header_factory(name, raw))
    except Exception:  # an encoded word or address the library cannot read: the raw text
        value = raw
    return _SPACES.sub(" ", clean(value)).strip()


def _decode(payload: bytes, charset: str | None, warnings: list[str]) -> str:
    if charset:
        try:
            codecs.lookup(charset)
            return payload.decode(charset, errors="replace")
        except (LookupError, ValueError):  # unknown, or no text encoding ("base64", "rot13")
            warnings.append(f"unknown charset {clean(charset)[:40]!r}; read as UTF-8")
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        return payload.decode("cp1252", errors="replace")


def part_text(part: Message, warnings: list[str]) -> str:
    """The decoded text of a text part (its transfer encoding and charset undone)."""
    try:
        payload = part.get_payload(decode=True)
        charset = part.get_content_charset()
    except Exception:
        payload, charset = None, None
    if not isinstance(payload, bytes):
        return ""
    return clean(_decode(payload, charset, warnings))


def body_part(message: EmailMessage) -> Message | None:
    """The part holding the message's text: plain text when there is one, else HTML."""
    try:
        return message.get_body(preferencelist=("plain", "html"))
    except Exception:
        return None


def body_text(part: Message | None, path: str, warnings: list[str]) -> str:
    """The message's text without quoted replies; HTML read as text by the core's HTML parser."""
    if part is None:
        return ""
    text = part_text(part, warnings)
    if part.get_content_subtype() == "html":
        parsed = HtmlParser().parse(drop_html_quotes(text), path)
        return drop_trailing_attribution("\n\n".join(block.text for block in parsed.blocks))
    return drop_quotes(text)


def _defects(message: Message) -> list[str]:
    names: list[str] = []
    for part in message.walk():
        names.extend(type(d).__name__ for d in getattr(part, "defects", ()))
    return sorted(set(names))


def _iso_date(value: str) -> str:
    try:
        return email.utils.parsedate_to_datetime(value).isoformat()
    except (TypeError, ValueError, IndexError, OverflowError):
        return value


def _blocks(lines: list[str], heading: tuple[str, ...]) -> tuple[Block, ...]:
    """The message's paragraphs as the core's text parser splits them, each under the message's heading."""
    parsed = TextParser().parse("\n".join(lines), "")
    return tuple(attrs.evolve(block, heading_path=heading) for block in parsed.blocks)


def render(message: EmailMessage, path: str, attachments: list[str]) -> ParsedDocument:
    """The document of ``message``: its headers as a heading, its text without quotes, its metadata."""
    warnings: list[str] = []
    values = {name: header(message, name, warnings) for name in (*SHOWN, "Message-ID", "In-Reply-To")}
    shown = [f"{name}: {values[name][:SHOWN_HEADER_CHARS]}" for name in SHOWN if values[name]]
    if attachments:
        shown.append("Attachments: " + ", ".join(attachments)[:SHOWN_HEADER_CHARS])
    body = body_text(body_part(message), path, warnings)
    lines = [*shown, "", *unicodedata.normalize("NFC", body).split("\n")]
    subject = values["Subject"] or "(no subject)"
    sender = values["From"].split("<")[0].strip().strip('"') or values["From"]
    heading = " — ".join(p for p in (subject[:200], ", ".join(v for v in (sender[:80], values["Date"]) if v)) if p)
    defects = _defects(message)
    if defects:
        warnings.append(f"broken MIME structure ({', '.join(defects[:3])}); read what could be read")
    metadata = {
        key: value[:SHOWN_HEADER_CHARS]
        for key, value in (
            ("from", values["From"]),
            ("to", values["To"]),
            ("date", _iso_date(values["Date"])),
            ("subject", values["Subject"]),
            ("message_id", values["Message-ID"]),
            ("in_reply_to", values["In-Reply-To"]),
        )
        if value
    }
    return ParsedDocument(
        title=subject[:200],
        blocks=_blocks(lines, (heading,)),
        metadata=metadata,
        warnings=tuple(dict.fromkeys(warnings)),
    )
