"""The document and page-image routes over hostile page numbers and citations (issue 42, part 5): a page
number of any length is a 404 naming the bound (a 400 past the length of a path), never a 500; a citation
in any form kb prints (``#`` sent as ``%23``) names its document, and one out of bounds is a 404 saying why."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import jsonschema
import pytest
from kb_serve_scans import start_with_scans, write_scans

from kb_serve.openapi import own_schema

pytest.importorskip("kb_documents", reason="kb-documents (PDF pages and images) is not installed")


def refused(reply: httpx.Response, status: int, words: str) -> None:
    """The reply is the one-line JSON error ``status`` whose message holds ``words``."""
    assert reply.status_code == status, (reply.status_code, reply.text)
    body = reply.json()
    jsonschema.validate(body, own_schema("error"))
    assert words in body["error"] and "\n" not in body["error"], body


def cited(citation: str) -> str:
    """The address of the document a citation names (its ``#`` and ``&`` escaped, as a link would)."""
    return "/documents/" + quote(citation, safe="/")


def test_page_numbers_of_any_length_are_a_404_naming_the_bound(
    start_server: Callable[..., Any], tmp_path: Path
) -> None:
    server = start_with_scans(start_server, write_scans(tmp_path / "scans", ("scan.pdf",)))
    with server.client() as http:
        bound = "a page is a whole number from 1 to 1,000,000"
        refused(http.get(f"/documents/scan.pdf/pages/{'9' * 4301}.png"), 400, "the page is longer than 1024 characters")
        refused(http.get(f"/documents/scan.pdf/pages/{'9' * 1000}.png"), 404, f"(1,000 digits): {bound}")
        refused(http.get(f"/documents/scan.pdf/pages/{'1' * 40}.png"), 404, bound)
        refused(http.get("/documents/scan.pdf/pages/1000001.png"), 404, f"has no page 1000001: {bound}")
        refused(http.get("/documents/scan.pdf/pages/0.png"), 404, "has no page 0")
        refused(http.get("/documents/scan.pdf/pages/3.png"), 404, "has no page 3 read by OCR (pages: 1, 2)")
        refused(http.get("/documents/scan.pdf/pages/%D9%A1.png"), 404, "no document at")  # (an Arabic-Indic 1)
        assert http.get("/documents/scan.pdf/pages/001.png").status_code == 200


def test_every_citation_form_kb_prints_names_its_document(start_server: Callable[..., Any], tmp_path: Path) -> None:
    server = start_with_scans(start_server, write_scans(tmp_path / "scans", ("scan.pdf",)))
    with server.client() as http:
        for citation in ("scan.pdf#L1-L3", "scan.pdf#page=1&L1-L3", "scan.pdf#page=1&xywh=72,96,432,31&L1-L3"):
            text = http.get(cited(citation))
            assert text.status_code == 200, (citation, text.text)
            assert text.json()["path"] == "scan.pdf"
            assert http.get(cited(citation) + "/pages/1.png").headers["content-type"] == "image/png"
        refused(http.get(cited("scan.pdf#page=3&L1-L3")), 404, "page=3 is not a page of 'scan.pdf': it has 2 pages")
        refused(http.get(cited("scan.pdf#L1-L999999999999")), 404, "line = 999999999999 in")
        refused(http.get(cited("scan.pdf#L-1-L2")), 404, "line = -1 in")
        refused(http.get(cited(f"scan.pdf#page={'9' * 1000}&L1-L2")), 404, "(1,000 digits) in")
        refused(http.get(cited("nowhere.pdf#L1-L2")), 404, "no document at 'nowhere.pdf#L1-L2'")
