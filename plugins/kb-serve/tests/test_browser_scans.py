"""The page in a real browser, over documents OCR read: a citation (from an answer, a search hit or an
address) opens its page image beside the OCR'd text, the cited region boxed where kb says it is, lines
read with low confidence marked, and an answer resting on them says so.

The scans (a two-page PDF, a photo) are drawn and read by a scripted engine (kb_serve_scans.py), so the
boxes and the confidences are known.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from kb_serve_scans import start_with_scans, write_scans
from playwright.sync_api import expect

from kb_core.commands import region_of

pytestmark = pytest.mark.slow
pytest.importorskip("kb_documents", reason="kb-documents (PDF pages and images) is not installed")

#: The box over the page image, as fractions of the image's (x, y, width, height).
BOX_ON_IMAGE = """() => {
  const rect = (s) => document.querySelector(s).getBoundingClientRect();
  const image = rect("#viewer-scan img"), box = rect("#viewer-scan rect.region");
  return [(box.x - image.x) / image.width, (box.y - image.y) / image.height, box.width / image.width,
          box.height / image.height];
}"""
NATURAL_SIZE = "() => ((i) => [i.naturalWidth, i.naturalHeight])(document.querySelector('#viewer-scan img'))"

AFTER = "(row) => getComputedStyle(row, '::after').content"
#: kb's note on an answer resting only on text OCR read with low confidence (kb_core's LOW_CONFIDENCE_NOTE).
LOW_NOTE = "it rests only on text read by OCR with low confidence: check it against the page"


def cited(href: str) -> tuple[str, int, int]:
    """(path, start, end) of a page link ``#/doc/PATH/Lstart-Lend``."""
    _, _, encoded, lines = href.split("/")
    start, end = lines.removeprefix("L").split("-L")
    return unquote(encoded), int(start), int(end)


def check_region(tab: Any, server: Any, path: str, start: int, end: int) -> Any:
    """The page image is shown, and the box over it is kb's region of lines ``start``..``end`` (within 1 %)."""
    tab.page.wait_for_selector("#viewer-scan img.loaded")
    document = server.app.state.service.read(lambda kb: kb.store.get_document(path))
    region = region_of(document.metadata, start, end)
    assert region is not None
    (width, height) = next(p[1:] for p in document.metadata["ocr"]["pages"] if p[0] == region.page)
    natural = tab.page.evaluate(NATURAL_SIZE)
    assert natural[0] > 0 and natural[0] / natural[1] == pytest.approx(width / height, abs=0.01)
    x, y, w, h = region.box
    assert tab.page.evaluate(BOX_ON_IMAGE) == pytest.approx([x / width, y / height, w / width, h / height], abs=0.01)
    expect(tab.page.locator("#viewer-scan")).to_have_attribute("data-page", str(region.page))
    return region


def test_a_citation_of_a_scan_opens_its_page_with_the_region_boxed_beside_the_text(
    start_server: Callable[..., Any], open_tab: Callable[..., Any], tmp_path: Path
) -> None:
    server = start_with_scans(start_server, write_scans(tmp_path / "scans"))
    tab = open_tab(server)
    tab.goto()
    tab.ask("When was the quarry pump at Wexcombe serviced?")
    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded")
    expect(tab.page.locator("#answer .ocr-note")).to_have_count(0)  # it rests on lines read well too
    link = tab.page.locator("#answer .answer-text a.cite").first
    path, start, end = cited(link.get_attribute("href") or "")
    assert path == "scan.pdf"
    expect(tab.page.locator("#answer li.source .ocr-place").first).to_contain_text("page 1 · OCR 0.")

    tab.open_from(link)
    region = check_region(tab, server, path, start, end)
    assert region.page == 1 and not region.low
    scan, lines = tab.page.locator("#viewer-scan"), tab.page.locator("#viewer-lines")
    boxed = f"the cited lines boxed (OCR confidence {region.confidence:.2f})"
    expect(scan.locator("figcaption")).to_contain_text(boxed)
    expect(lines.locator(".line.cited")).to_contain_text(["The quarry pump at Wexcombe was serviced on 12 March."])
    beside = scan.bounding_box(), lines.bounding_box()
    assert beside[0] and beside[1] and beside[0]["x"] + beside[0]["width"] <= beside[1]["x"] + 1  # text to its right
    low = lines.locator(".line.low")
    expect(low).to_have_text(["Its seals were replaced with grey nitrile rings."])
    expect(low).to_have_attribute("title", "low OCR confidence 0.41")
    assert "low OCR" in low.evaluate(AFTER)  # marked on the screen, not only in a title
    expect(scan.locator("rect.low-line")).to_have_count(1)
    expect(scan.locator("rect.low-line title")).to_have_text("line 4: low OCR confidence 0.41")

    # a search hit on page 2 opens that page (landscape), its own region boxed
    tab.page.click("#tab-search")
    tab.page.fill("#search-q", "weir gauge storm metres")
    tab.page.select_option("#search-mode", "lexical")
    tab.page.press("#search-q", "Enter")
    hit = tab.page.locator("#hits .search-hit a.source-place").first
    expect(hit).to_contain_text("scan.pdf")
    _, start, end = cited(hit.get_attribute("href") or "")
    tab.open_from(hit)
    assert check_region(tab, server, "scan.pdf", start, end).page == 2
    assert tab.page.evaluate(NATURAL_SIZE) == [1600, 1132]
    expect(tab.page.locator("#viewer-where")).to_contain_text("page 2 of 2")

    # an answer resting only on lines read with low confidence says so; its region is marked low
    tab.page.click("#tab-ask")
    tab.page.click("#new-thread")
    tab.ask("Where was a kingfisher seen?")
    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded")
    note = tab.page.locator("#answer .ocr-note")
    expect(note).to_be_visible()
    expect(note).to_contain_text(LOW_NOTE)
    link = tab.page.locator("#answer .answer-text a.cite").first
    path, start, end = cited(link.get_attribute("href") or "")
    assert path == "birds.png"
    tab.open_from(link)
    assert check_region(tab, server, path, start, end).low
    expect(scan.locator("rect.region.low")).to_have_count(1)
    expect(scan.locator("figcaption")).to_contain_text("low OCR confidence 0.41, check them against the page")
    expect(lines.locator(".line.low")).to_have_count(2)

    tab.page.reload()  # the address opens it again, page image and all
    check_region(tab, server, path, start, end)
    tab.page.evaluate("hash => { location.hash = hash; }", "#/doc/notes%2Fheliograph.md/L5-L6")
    expect(tab.page.locator("#viewer-lines .line.cited").first).to_be_visible()
    expect(scan).to_be_hidden()  # a note not read by OCR has no page image
    tab.check_clean()


def test_a_region_across_pages_has_the_confidence_of_the_lines_it_boxes(
    start_server: Callable[..., Any], open_tab: Callable[..., Any], tmp_path: Path
) -> None:
    server = start_with_scans(start_server, write_scans(tmp_path / "scans", ("scan.pdf",)))
    document = server.app.state.service.read(lambda kb: kb.store.get_document("scan.pdf"))
    lines = document.metadata["ocr"]["lines"]
    start = next(line[0] for line in lines if line[6] < 0.5)  # the low line on page 1 ...
    end = max(line[0] for line in lines)  # ... to the last line of page 2
    region = region_of(document.metadata, start, end)
    assert region is not None and region.page == 1
    tab = open_tab(server)
    tab.page.goto(f"{server.url}/#/doc/scan.pdf/L{start}-L{end}")
    check_region(tab, server, "scan.pdf", start, end)
    caption = tab.page.locator("#viewer-scan figcaption")
    expect(caption).to_contain_text(f"OCR confidence {region.confidence:.2f}")  # as kb ask says it, not page 2's too
    tab.check_clean()


def rewrite_notes(tab: Any, change: Callable[[str], str]) -> None:
    """Pass every answer stream of the tab through ``change`` (its text, the answers' JSON among it)."""

    def handle(route: Any) -> None:
        response = route.fetch()
        route.fulfill(response=response, body=change(response.text()))

    tab.page.route(re.compile(r"/threads(/[^/?]+/ask)?\?stream=1$"), handle)


def test_the_low_confidence_warning_follows_the_citations_not_the_notes_words(
    start_server: Callable[..., Any], open_tab: Callable[..., Any], tmp_path: Path
) -> None:
    server = start_with_scans(start_server, write_scans(tmp_path / "scans"))
    tab = open_tab(server)
    tab.goto()
    note = tab.page.locator("#answer .ocr-note")
    changed: list[str] = []

    def reworded(text: str) -> str:
        changed.extend([LOW_NOTE] * text.count(LOW_NOTE))
        return text.replace(LOW_NOTE, "nur unsicher gelesener Text")

    def claimed(text: str) -> str:
        new, count = re.subn(r'"note": ?""', f'"note": "{LOW_NOTE}"', text)
        changed.extend(["claimed"] * count)
        return new

    # every citation low: the warning, whatever words the note is in
    rewrite_notes(tab, reworded)
    tab.ask("Where was a kingfisher seen?")
    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded")
    expect(note).to_be_visible()
    expect(note).to_contain_text("Low OCR confidence kb's note: nur unsicher gelesener Text")
    assert LOW_NOTE in changed
    # a citation read well: no warning, even where a note used kb's words
    tab.page.unroute_all()
    rewrite_notes(tab, claimed)
    tab.page.click("#new-thread")
    tab.ask("When was the quarry pump at Wexcombe serviced?")
    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded")
    expect(tab.page.locator("#answer li.source .ocr-place").first).to_contain_text("page 1")
    assert "claimed" in changed
    expect(note).to_have_count(0)
    tab.check_clean()


def test_with_a_token_the_page_image_is_fetched_with_it(
    start_server: Callable[..., Any], open_tab: Callable[..., Any], tmp_path: Path
) -> None:
    token = "correct-horse-battery-staple"
    server = start_with_scans(start_server, write_scans(tmp_path / "scans", ("birds.png",)), token=token)
    tab = open_tab(server)
    tab.page.goto(server.url + "/#/doc/birds.png/L2-L3")
    tab.page.fill("#token-input", token)
    tab.page.click("#token-form button")
    check_region(tab, server, "birds.png", 2, 3)
    fetched = [r for r in tab.requests if r.url.endswith("/documents/birds.png/pages/1.png")]
    assert fetched and fetched[-1].headers.get("authorization") == f"Bearer {token}"
    tab.errors.clear()
    assert tab.foreign_requests() == [] and tab.dialogs == []
    assert tab.page.evaluate("window.__cspViolations") == []
