"""Builders for the kb-mail tests: messages and mailboxes (imported by the tests as ``mailtest``)."""

from __future__ import annotations

import mailbox
from collections.abc import Sequence
from email.message import EmailMessage
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DOCUMENT_FIXTURES = REPO / "plugins" / "kb-documents" / "fixtures" / "good"


def message(
    subject: str,
    body: str,
    *,
    sender: str = "Alice Example <alice@example.com>",
    to: str = "Bob <bob@example.com>",
    message_id: str | None = None,
    date: str = "Tue, 05 Mar 2024 10:00:00 +0000",
    html: str | None = None,
    attachments: Sequence[tuple[str, bytes, str]] = (),
) -> EmailMessage:
    """A message; ``html`` alone (``body`` empty) makes an HTML-only one; attachments are (name, bytes, type)."""
    mail = EmailMessage()
    mail["From"] = sender
    mail["To"] = to
    mail["Subject"] = subject
    mail["Date"] = date
    if message_id:
        mail["Message-ID"] = f"<{message_id}>"
    if body:
        mail.set_content(body)
        if html:
            mail.add_alternative(html, subtype="html")
    elif html:
        mail.set_content(html, subtype="html")
    for name, data, kind in attachments:
        maintype, subtype = kind.split("/")
        mail.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return mail


def write_mbox(path: Path, messages: Sequence[EmailMessage]) -> Path:
    """An mbox at ``path`` holding ``messages`` (written by the standard library, replacing any file)."""
    path.unlink(missing_ok=True)
    box = mailbox.mbox(path)
    for item in messages:
        box.add(item)
    box.flush()
    box.close()
    return path
