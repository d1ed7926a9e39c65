"""End to end: mail ingested a document per message and per attachment, searched, asked, re-ingested."""

from __future__ import annotations

from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path

import pytest
from mailtest import DOCUMENT_FIXTURES, message, write_mbox

import kb_core

OpenKb = Callable[[], kb_core.KnowledgeBase]
PDF = DOCUMENT_FIXTURES / "report.pdf"
DOCX = DOCUMENT_FIXTURES / "handbook.docx"


def _thread() -> list[EmailMessage]:
    first = message(
        "Heron pump maintenance",
        "The heron pump seals were replaced on Monday by the Ridgeback crew.\n\nNext inspection in spring.\n",
        message_id="first@example.com",
        attachments=[("notes.md", b"# Valve notes\n\nThe kingfisher valve leaks at the flange.\n", "text/markdown")],
    )
    reply = message(
        "Re: Heron pump maintenance",
        "Thanks, the osprey schedule is noted.\n\nOn Tue, 5 Mar 2024, Alice Example wrote:\n"
        "> The heron pump seals were replaced on Monday by the Ridgeback crew.\n",
        sender="Bob <bob@example.com>",
        message_id="reply@example.com",
    )
    newsletter = message(
        "Bird count",
        "",
        html="<html><body><p>The <b>bittern</b> count rose to 14.</p>"
        "<blockquote>quoted heron text</blockquote></body></html>",
        message_id="news@example.com",
    )
    return [first, reply, newsletter]


def _hits(kb: kb_core.KnowledgeBase, text: str) -> tuple[kb_core.Hit, ...]:
    return kb_core.search(kb, kb_core.SearchQuery(text=text, mode="lexical", k=5)).hits


def test_an_mbox_is_a_document_per_message_and_attachment_with_quotes_left_out(tmp_path: Path, open_kb: OpenKb) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    write_mbox(folder / "inbox.mbox", _thread())
    kb = open_kb()
    report = kb_core.ingest_paths(kb, [folder])
    assert report.failed == []
    assert sorted(report.added) == [
        "inbox.mbox",
        "inbox.mbox/first@example.com",
        "inbox.mbox/first@example.com/notes.md",
        "inbox.mbox/news@example.com",
        "inbox.mbox/reply@example.com",
    ]
    # The quoted line is found once, in the message that said it; the HTML blockquote is left out too.
    assert [h.doc_path for h in _hits(kb, "Ridgeback crew seals")] == ["inbox.mbox/first@example.com"]
    assert [h.doc_path for h in _hits(kb, "bittern")] == ["inbox.mbox/news@example.com"]
    (valve,) = _hits(kb, "kingfisher valve flange")
    assert valve.doc_path == "inbox.mbox/first@example.com/notes.md"
    (osprey,) = _hits(kb, "osprey schedule")
    assert osprey.heading_path == ("Re: Heron pump maintenance — Bob, Tue, 05 Mar 2024 10:00:00 +0000",)
    # The document starts with the headers; its lines are what citations count.
    document = kb.store.get_document("inbox.mbox/first@example.com")
    assert document is not None and document.title == "Heron pump maintenance"
    assert document.metadata["message_id"] == "<first@example.com>"
    assert document.metadata["date"] == "2024-03-05T10:00:00+00:00"
    (chunk,) = kb.store.chunks_of(["inbox.mbox/first@example.com"])
    assert chunk.text.splitlines()[:5] == [
        "From: Alice Example <alice@example.com>",
        "To: Bob <bob@example.com>",
        "Date: Tue, 05 Mar 2024 10:00:00 +0000",
        "Subject: Heron pump maintenance",
        "Attachments: notes.md",
    ]
    assert str(chunk.citation) == "inbox.mbox/first@example.com#L1-L9"
    # kb ask answers from the message and cites it.
    answer = kb_core.ask(kb, "When were the heron pump seals replaced?", save=False)
    assert answer.grounded, answer.note
    assert answer.citations[0].citation.path == "inbox.mbox/first@example.com"


def test_reingest_skips_an_unchanged_mailbox_and_removes_a_deleted_message(tmp_path: Path, open_kb: OpenKb) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    thread = _thread()
    box = write_mbox(folder / "inbox.mbox", thread)
    kb = open_kb()
    first = kb_core.ingest_paths(kb, [folder])
    again = kb_core.ingest_paths(kb, [folder])
    assert (again.added, again.updated, again.removed, again.failed) == ([], [], [], [])
    assert again.unchanged == len(first.added)
    # The first message (and its attachment) deleted, a new one appended: only those change.
    later = message("Weir levels", "The weir level fell by 20 cm.\n", message_id="weir@example.com")
    write_mbox(box, [*thread[1:], later])
    changed = kb_core.ingest_paths(kb, [folder])
    assert sorted(changed.removed) == ["inbox.mbox/first@example.com", "inbox.mbox/first@example.com/notes.md"]
    assert changed.added == ["inbox.mbox/weir@example.com"]
    assert changed.updated == ["inbox.mbox"] and changed.unchanged == 2
    assert not _hits(kb, "kingfisher valve flange")
    # kb rm of the mailbox takes its messages with it; so does deleting the file.
    kb_core.ingest_paths(kb, [folder])
    assert sorted(kb_core.remove_documents(kb, ["inbox.mbox"]))[0] == "inbox.mbox"
    assert kb.store.list_documents() == []
    kb_core.ingest_paths(kb, [folder])
    box.unlink()
    gone = kb_core.ingest_paths(kb, [folder])
    assert len(gone.removed) == 4 and kb.store.list_documents() == []


def test_an_eml_file_is_its_message_with_pdf_and_docx_attachments_under_it(tmp_path: Path, open_kb: OpenKb) -> None:
    if not (PDF.exists() and DOCX.exists()):
        pytest.skip("kb-documents' fixtures are not here")
    pytest.importorskip("kb_documents")
    folder = tmp_path / "mail"
    folder.mkdir()
    attached = [("report.pdf", PDF.read_bytes(), "application/pdf"), ("handbook.docx", DOCX.read_bytes(), "a/b")]
    mail = message("Quarterly report", "See the attached report.\n", attachments=attached)
    (folder / "report mail.eml").write_bytes(mail.as_bytes())
    kb = open_kb()
    seen: list[tuple[str, int, int]] = []
    report = kb_core.ingest_paths(kb, [folder], progress=lambda stage, done, total: seen.append((stage, done, total)))
    assert report.failed == []
    assert sorted(report.added) == ["report mail.eml", "report mail.eml/handbook.docx", "report mail.eml/report.pdf"]
    top = _hits(kb, "transformer fault Ridgeback")[0]
    assert top.doc_path == "report mail.eml/report.pdf"
    document = kb.store.get_document("report mail.eml/report.pdf")
    assert document is not None and document.parser == "pdf" and "page_lines" in document.metadata
    size = (folder / "report mail.eml").stat().st_size
    assert ("reading report mail.eml", size, size) in seen  # progress through the file, to its end
    assert kb.store.get_document("report mail.eml") is not None
    # Ingesting the file alone (a root of one file) skips it unchanged, parts included.
    alone = kb_core.ingest_paths(kb, [folder / "report mail.eml"])
    assert alone.unchanged == 3 and alone.added == alone.removed == []


def test_a_cut_short_mailbox_stores_the_whole_messages_and_reports_the_last(tmp_path: Path, open_kb: OpenKb) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    box = write_mbox(folder / "inbox.mbox", _thread())
    kb = open_kb()
    kb_core.ingest_paths(kb, [folder])
    data = box.read_bytes()
    box.write_bytes(data[: data.rindex(b"bittern") + 3])  # the newsletter, last, is cut inside its text
    report = kb_core.ingest_paths(kb, [folder])
    (failed,) = report.failed
    assert failed.path == "inbox.mbox/news@example.com"
    assert failed.reason == (
        "the mailbox ends inside this message (the file is cut short); skipped; the stored earlier version is kept"
    )
    assert report.removed == [] and kb.store.get_document("inbox.mbox/news@example.com") is not None
    again = kb_core.ingest_paths(kb, [folder])  # unchanged: skipped, and the failure reported again
    assert [w.path for w in again.failed] == ["inbox.mbox/news@example.com"] and again.unchanged == 5


def test_a_file_that_is_no_mailbox_is_one_line_and_keeps_what_is_stored(tmp_path: Path, open_kb: OpenKb) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    box = write_mbox(folder / "inbox.mbox", _thread())
    kb = open_kb()
    kb_core.ingest_paths(kb, [folder])
    box.write_bytes(b"Hello, this is not a mailbox\n")
    report = kb_core.ingest_paths(kb, [folder])
    assert [(w.path, w.reason) for w in report.failed] == [
        (
            "inbox.mbox",
            "not an mbox file: it does not start with a 'From ' line; the stored earlier version is kept",
        )
    ]
    assert report.removed == [] and len(kb.store.list_documents()) == 5
