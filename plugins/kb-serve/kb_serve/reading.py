"""What the page reads besides the CLI's JSON: a document's text by line, and the stored answers.

**A document's text** (``GET /documents/{path}``) comes from the store of record, never from the
file on disk: the lines are put back from its chunks by :func:`kb_core.commands.stored_lines`
(a chunk that does not line up with its range is fitted into it, and the document is then marked
``exact: false``; a line no chunk covers is ``null``).

Reading the store rather than the file means a citation shows what was indexed, even when the file
has changed or gone since, and the server opens no file a request names.

A document OCR read (a scanned PDF, an image file) also carries ``ocr``: the pages OCR read with their
size, and each line's page, box and confidence (from ``metadata["ocr"]``, read by
:func:`kb_core.commands.ocr_lines`), so the page can show a citation's region on the page image
(:mod:`kb_serve.page_images`) and mark the lines read with low confidence.

**Stored answers** (``GET /answers``, ``GET /answers/{id}``) are the rows ``kb ask`` keeps
(:mod:`kb_core.storage.answers`): the list is ``kb answers list --json``; one answer carries its
question, text, verdict and citations (the store keeps neither the candidates nor the sentences).
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

import kb_core
from kb_core import Document, KnowledgeBase
from kb_core.commands import LOW_CONFIDENCE, ocr_lines, stored_lines
from kb_core.plugin.stores import current_access
from kb_core.service import people
from kb_serve.access import check_owner, check_readable
from kb_serve.errors import ApiError

#: Stored answers one ``GET /answers`` lists by default (at most: kb_core.bounds.LIST_LIMIT).
DEFAULT_ANSWERS = 50
_LANG = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8}){0,3}")
_ANSWER_ID = re.compile(r"ans_[0-9a-f]{16}")


def _lang(metadata: dict[str, Any]) -> str | None:
    for key in ("lang", "language"):
        value = metadata.get(key)
        if isinstance(value, str) and _LANG.fullmatch(value):
            return value
    return None


def _pages(metadata: dict[str, Any]) -> list[int]:
    value = metadata.get("page_lines")
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value):
        return value
    return []


def ocr_pages(metadata: dict[str, Any]) -> dict[int, tuple[int, int]]:
    """The size (width, height in the page's units) of every page OCR read, by number (malformed ones left out)."""
    ocr = metadata.get("ocr")
    rows = ocr.get("pages") if isinstance(ocr, dict) else None
    found: dict[int, tuple[int, int]] = {}
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, list) and len(row) == 3 and all(type(v) is int and v >= 1 for v in row):
            found[row[0]] = (row[1], row[2])
    return found


def _ocr(metadata: dict[str, Any]) -> dict[str, Any] | None:
    """The pages OCR read and where each line it read sits on its page (None: OCR read none of it)."""
    pages = ocr_pages(metadata)
    if not pages:
        return None
    lines = sorted(ocr_lines(metadata).values(), key=lambda r: r.line)
    return {
        "low_confidence": LOW_CONFIDENCE,
        "pages": [[page, width, height] for page, (width, height) in sorted(pages.items())],
        "lines": [
            {"line": r.line, "page": r.page, "box": list(r.box), "confidence": r.confidence, "low": r.low}
            for r in lines
            if r.page in pages
        ],
    }


def stored_document(kb: KnowledgeBase, path: str) -> Document:
    """The stored document at ``path`` (NFC, as paths are stored), or the one a citation of it names, in any
    form kb prints (``scan.pdf#page=1&xywh=72,96,432,31&L1-L3``, sent with ``#`` as ``%23``); a 404 when
    there is none, or when the citation does not hold (a line or page out of bounds, a page it does not have)."""
    clean = unicodedata.normalize("NFC", path)

    def missing() -> ApiError:
        return ApiError(404, f"no document at {clean!r}", hint="GET /documents lists the stored paths")

    check_readable(clean.rpartition("#")[0] or clean, missing)  # (a person's: outside their grants, as absent)
    check_readable(clean, missing)
    document = kb.store.get_document(clean)
    cited = kb.store.get_document(clean.rpartition("#")[0]) if document is None and "#" in clean else None
    if cited is not None:  # a citation of a stored document: its lines and page must hold
        try:
            kb_core.Citation.parse(clean, lambda _path: page_count(cited.metadata))
        except kb_core.KbError as exc:
            raise ApiError(404, exc.message, hint=exc.hint) from None
        return cited
    if document is None:
        raise missing()
    return document


def page_count(metadata: dict[str, Any]) -> int:
    """How many pages a document has (0: none): its ``page_lines``, else the pages OCR read."""
    return len(_pages(metadata)) or max(ocr_pages(metadata), default=0)


def document_text(kb: KnowledgeBase, path: str) -> dict[str, Any]:
    """``document_text.v1``: the stored document at ``path``, line by line; 404 when there is none."""
    return text_of(kb, stored_document(kb, path))


def text_of(kb: KnowledgeBase, document: Document) -> dict[str, Any]:
    """``document_text.v1`` of a stored ``document``: its text line by line, from its chunks."""
    chunks = kb.store.chunks_of([document.path])
    lines, exact = stored_lines(chunks)
    return {
        "path": document.path,
        "title": document.title,
        "parser": document.parser,
        "lang": _lang(document.metadata),
        "line_count": len(lines),
        "exact": exact,
        "pages": _pages(document.metadata),
        "sections": [
            {"start_line": c.start_line, "end_line": c.end_line, "heading_path": list(c.heading_path)}
            for c in chunks
            if 1 <= c.start_line <= c.end_line
        ],
        "lines": lines,
        "ocr": _ocr(document.metadata),
    }


def answer_history(kb: KnowledgeBase, limit: int) -> dict[str, Any]:
    """``answer_history.v1`` (as ``kb answers list --json``): the newest ``limit`` stored answers and the total."""
    answers, total = people.own_answers(kb, limit)  # (a person's own answers only)
    return {"answers": answers, "total": total}


def owned_answer(kb: KnowledgeBase, answer_id: str) -> dict[str, Any]:
    """:func:`stored_answer` for its owner (with people); a citation of a document they can no longer read
    shows no current text."""

    def missing() -> ApiError:
        return ApiError(404, f"no stored answer with id {answer_id[:40]!r}", hint="GET /answers lists them")

    check_owner(kb, "answer", answer_id, missing)
    shown = stored_answer(kb, answer_id)
    access = current_access()
    if access is not None:
        for citation in shown["citations"]:
            now = citation.get("now")
            if isinstance(now, dict) and not access.can_read(str(citation.get("path") or "")):
                now["now_text"] = None
    return shown


def stored_answer(kb: KnowledgeBase, answer_id: str) -> dict[str, Any]:
    """``stored_answer.v1``: one stored answer with its citations and whether they still hold; 404 when there is none.

    The answer and its ``state`` are kb_core's (``kb answers show``); each citation is the one the
    answer gave (with its ``ref``, chunk and heading path, which the page links), and its ``now``
    says where it stands now and, when it broke, how.
    """
    if not _ANSWER_ID.fullmatch(answer_id):
        raise ApiError(404, f"no stored answer with id {answer_id[:40]!r}", hint="GET /answers lists them")
    now = kb_core.stored_answer(kb.store, answer_id)  # a NotFoundError is a 404
    given = json.loads(kb.store.answer_citations_json(answer_id) or "[]")
    citations = [c for c in given if isinstance(c, dict)] if isinstance(given, list) else []
    standing = {c.marker: c for c in now.citations}
    for citation in citations:
        marker = citation.get("marker")
        current = standing.get(marker) if isinstance(marker, int) else None
        citation["now"] = (
            None
            if current is None
            else {
                "start_line": current.start_line,
                "end_line": current.end_line,
                "state": current.state,
                "reason": current.reason,
                "now_text": current.now_text,
            }
        )
    payload = {key: getattr(now, key) for key in ("answer_id", "created_at", "question", "answer", "grounded")}
    return payload | {"refusal_reason": now.refusal_reason, "state": now.state, "citations": citations}
