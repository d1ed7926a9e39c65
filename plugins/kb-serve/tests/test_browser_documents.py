"""The page in a real browser: hostile notes stay inert, uploads (chosen or dropped) are found by
search and deleted after a confirmation, and questions asked before reopen with their citations.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

import kb_core

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[3] / "fixtures" / "corpus"
REPORT_PDF = Path(__file__).resolve().parents[2] / "kb-documents" / "fixtures" / "good" / "report.pdf"
PWNED = "window.__pwned=1"
HOSTILE_MD = f"""# Zanzibar marmalade

The zanzibar marmalade recipe is kept by the quince guild.

<script>{PWNED}</script>
<img src=x onerror="{PWNED}">
<img src=x onerror=alert(1)>
[x](javascript:{PWNED})
<a href="javascript:{PWNED}">click me</a>
<svg xmlns="http://www.w3.org/2000/svg" onload="{PWNED}"><script>{PWNED}</script></svg>
<iframe src="javascript:{PWNED}"></iframe>
<div style="background:url(javascript:{PWNED})" onmouseover="{PWNED}">raw html in Markdown</div>
<form action="javascript:{PWNED}"><button>go</button></form>
"""
HOSTILE_HTML = f"""<!doctype html><html><head><title>Quince guild</title>
<script>{PWNED}</script></head><body><h1>Quince guild</h1>
<p>The quince guild meets on zanzibar marmalade day. &lt;script&gt;{PWNED}&lt;/script&gt;
<img src=x onerror="{PWNED}"></p></body></html>
"""
ELEMENTS = "script, img, svg, iframe, object, embed, form:not(#ask-form):not(#search-form):not(#token-form), style"


def no_markup_ran(tab: Any) -> None:
    """Nothing the notes held ran or became an element; every link on the page stays inside it."""
    assert tab.page.evaluate("typeof window.__pwned") == "undefined"
    assert tab.page.evaluate(f"document.querySelectorAll('main :is({ELEMENTS})').length") == 0
    hrefs = tab.page.evaluate("Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'))")
    assert all(href.startswith("#") for href in hrefs), hrefs
    tab.check_clean()


def test_hostile_notes_show_as_text_and_run_nothing(
    start_server: Callable[..., Any], open_tab: Callable[..., Any], tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    (corpus / "hostile").mkdir()
    (corpus / "hostile" / "marmalade.md").write_text(HOSTILE_MD, encoding="utf-8")
    (corpus / "hostile" / "guild.html").write_text(HOSTILE_HTML, encoding="utf-8")
    server = start_server()
    tab = open_tab(server)
    tab.goto()
    tab.page.click("#tab-documents")
    tab.page.set_input_files("#upload-input", [str(corpus / "hostile" / n) for n in ("marmalade.md", "guild.html")])
    expect(tab.page.locator("#upload-report .upload.added")).to_have_count(2)

    tab.page.fill("#doc-filter", "marmalade")
    tab.open_from(tab.page.locator("#doc-list a.doc-path"))
    lines = tab.page.locator("#viewer-lines")
    expect(lines).to_contain_text(f"<script>{PWNED}</script>")
    expect(lines).to_contain_text(f"[x](javascript:{PWNED})")
    expect(lines).to_contain_text('<svg xmlns="http://www.w3.org/2000/svg"')
    tab.page.hover("#viewer-lines .line >> nth=8")  # over the onmouseover line
    no_markup_ran(tab)

    tab.page.click("#tab-search")
    tab.page.fill("#search-q", "zanzibar marmalade quince guild")
    tab.page.select_option("#search-mode", "lexical")
    tab.page.press("#search-q", "Enter")
    expect(tab.page.locator("#hits .search-hit")).not_to_have_count(0)
    expect(tab.page.locator("#hits mark").first).to_be_visible()
    for link in tab.page.locator("#hits a.source-place").all():
        tab.open_from(link)
        expect(tab.page.locator("#viewer-lines .line.cited").first).to_be_visible()
    no_markup_ran(tab)

    tab.page.click("#tab-ask")
    tab.ask("What does the quince guild keep about zanzibar marmalade?")
    expect(tab.page.locator("#answer .verdict")).to_be_visible()
    tab.open_from(tab.page.locator("#answer a.cite, #answer a.source-place").first)
    expect(tab.page.locator("#viewer-lines .line.cited").first).to_be_visible()
    no_markup_ran(tab)


def test_an_uploaded_file_is_found_by_search_and_deleted_after_a_confirmation(
    start_server: Callable[..., Any], open_tab: Callable[..., Any], tmp_path: Path
) -> None:
    note = tmp_path / "backups.md"
    note.write_text("# Backups\n\nBackups are verified every night on a scratch machine named quokka.\n")
    server = start_server()
    tab = open_tab(server)
    tab.goto()
    tab.page.click("#tab-documents")
    expect(tab.page.locator("#doc-count")).to_have_text("12 documents")
    tab.page.set_input_files("#upload-input", str(note))
    expect(tab.page.locator("#upload-report .upload")).to_have_text("backups.md added")
    expect(tab.page.locator("#doc-count")).to_have_text("13 documents")
    expect(tab.page.locator("#health")).to_contain_text("13 documents")

    # a dropped file is uploaded too
    dropped = tab.page.evaluate_handle(
        "() => { const t = new DataTransfer();"
        " t.items.add(new File(['# Kiwi\\n\\nThe kiwi rota starts on Mondays.\\n'], 'kiwi.md',"
        " {type: 'text/markdown'}));"
        " return t; }"
    )
    tab.page.dispatch_event("#drop", "drop", {"dataTransfer": dropped})
    expect(tab.page.locator("#upload-report .upload")).to_have_text("kiwi.md added")

    tab.page.click("#tab-search")
    tab.page.fill("#search-q", "scratch machine quokka")
    tab.page.fill("#search-path", "back*")
    tab.page.click("#search-form button")
    hit = tab.page.locator("#hits .search-hit")
    expect(hit).to_have_count(1)
    expect(hit.locator("a.source-place")).to_contain_text("backups.md")
    expect(hit.locator("mark")).to_have_text(["scratch", "machine", "quokka"])
    tab.open_from(hit.locator("a.source-place"))
    expect(tab.page.locator("#viewer-lines .line.cited")).to_contain_text(["Backups are verified every night"])

    tab.page.click("#tab-documents")
    tab.page.fill("#doc-filter", "backups")
    row = tab.page.locator("#doc-list li.document")
    expect(row).to_have_count(1)
    row.get_by_role("button", name="Delete…").click()
    expect(row.locator(".confirm")).to_have_text("Delete backups.md?")
    row.get_by_role("button", name="Keep").click()  # changed its mind: nothing happens
    expect(row.locator(".confirm")).to_have_count(0)
    row.get_by_role("button", name="Delete…").click()
    row.get_by_role("button", name="Delete", exact=True).click()
    expect(tab.page.locator("#upload-report")).to_have_text("Deleted backups.md.")
    expect(tab.page.locator("#doc-list li.document")).to_have_count(0)
    with server.client() as http:
        assert "backups.md" not in [d["path"] for d in http.get("/documents").json()["documents"]]
    tab.check_clean()


def test_questions_asked_before_reopen_with_their_citations(
    start_server: Callable[..., Any], open_tab: Callable[..., Any]
) -> None:
    server = start_server()
    with server.client() as http:
        http.post("/ask", json={"question": "What is the capital of Mongolia's oldest bakery?"})
        http.post("/ask", json={"question": "At what wind speed does Heliograph move the panels to the stow angle?"})
    tab = open_tab(server)
    tab.goto()
    tab.page.click("#tab-history")
    rows = tab.page.locator("#history-list li")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("wind speed")  # newest first
    expect(rows.first.locator(".badge")).to_have_text("grounded")
    expect(rows.nth(1).locator(".badge")).to_contain_text("refused")
    rows.first.locator("a").click()
    expect(tab.page.locator("#panel-ask")).to_be_visible()
    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded")
    expect(tab.page.locator("#answer .facts")).to_contain_text("stored")
    tab.page.locator("#answer .answer-text a.cite").first.click()
    expect(tab.page.locator("#viewer-path")).to_contain_text("notes/heliograph.md")
    expect(tab.page.locator("#viewer-heading")).to_have_text("Heliograph › Operation › Wind protection")
    expect(tab.page.locator("#viewer-lines .line.cited")).to_contain_text(["stow angle of 12 degrees"])
    expect(tab.page.locator("#viewer-lines .gap").first).to_contain_text("not kept in the store")  # the front matter

    tab.page.reload()  # the address names the open document: it opens again
    expect(tab.page.locator("#viewer-lines .line.cited")).to_contain_text(["stow angle of 12 degrees"])
    tab.page.go_back()
    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded")
    tab.check_clean()


def test_a_pdf_citation_shows_the_text_of_its_page(
    start_server: Callable[..., Any], open_tab: Callable[..., Any]
) -> None:
    pytest.importorskip("kb_documents", reason="kb-documents (the PDF parser) is not installed")
    server = start_server()
    tab = open_tab(server)
    tab.goto()
    tab.page.click("#tab-documents")
    tab.page.set_input_files("#upload-input", str(REPORT_PDF))
    expect(tab.page.locator("#upload-report .upload")).to_have_text("report.pdf added")
    tab.page.click("#tab-search")
    tab.page.fill("#search-q", "transformer fault Ridgeback")
    tab.page.select_option("#search-mode", "lexical")
    tab.page.press("#search-q", "Enter")
    hit = tab.page.locator("#hits .search-hit").first
    expect(hit.locator("a.source-place")).to_contain_text("report.pdf")
    tab.open_from(hit.locator("a.source-place"))
    expect(tab.page.locator("#viewer-where")).to_contain_text("page 2 of 3")
    shown = tab.page.evaluate("Array.from(document.querySelectorAll('#viewer-lines .line')).map(r => r.textContent)")
    assert shown[0] == "Page 2" and "Page 1" not in shown and "Page 3" not in shown  # that page's text only
    expect(tab.page.locator("#viewer-lines .line.cited")).to_contain_text(["Ridgeback lost two days of output"])
    tab.check_clean()


def test_a_crafted_document_link_is_refused_and_nothing_outside_documents_is_fetched(
    start_server: Callable[..., Any], open_tab: Callable[..., Any]
) -> None:
    """``#/doc/..%2F..%2Fhealth`` made the page fetch ``/documents/../../health``, which the browser
    resolves to ``/health``; the viewer then stayed on "Opening…"."""
    server = start_server()
    tab = open_tab(server)
    tab.goto("/#/doc/..%2F..%2Fhealth")
    alert = tab.page.locator("#viewer-lines [role=alert]")
    refusal = "a document's path has no empty, '.' or '..' part (this link was not made by kb)"
    expect(alert).to_have_text(f"Cannot open ../../health: {refusal}.")
    expect(tab.page.locator("#viewer-where")).to_have_text("")
    for crafted, shown in [
        ("..%2F..%2Fopenapi.json", "../../openapi.json"),
        ("notes%2F..%2F..%2F..%2Fthreads", "notes/../../../threads"),
        ("..", ".."),
        ("%2Fanswers", "/answers"),
        ("notes%2F.%2Fheliograph.md", "notes/./heliograph.md"),
    ]:
        tab.page.evaluate("hash => { location.hash = hash; }", f"#/doc/{crafted}")
        expect(alert).to_have_text(f"Cannot open {shown}: {refusal}.")
    tab.page.evaluate("hash => { location.hash = hash; }", "#/answer/..")  # /answers/.. would be /
    expect(tab.page.locator("#ask-state")).to_have_text(".. is not a stored answer's id")
    tab.page.evaluate("hash => { location.hash = hash; }", "#/doc/notes%2Fheliograph.md/L5-L6")  # a real one opens
    expect(tab.page.locator("#viewer-lines .line.cited").first).to_be_visible()
    paths = [urlsplit(request.url).path for request in tab.requests]
    assert paths.count("/") == 1 and paths.count("/health") == 1, paths  # the page's own, at start
    fetched = [p for p in paths if p not in ("/", "/health") and not p.startswith("/page/")]
    assert set(fetched) == {"/documents/notes/heliograph.md"}, paths  # (popstate and hashchange both open it)
    tab.check_clean()


#: The characters the page shows escaped (a JavaScript character class, as kb_serve/page/js/dom.js has it).
BIDI_AND_CONTROLS = (
    "[\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f"
    "\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]"
)
TROJAN_MD = (
    "# Invoice\n\nThe total due to the quokka ledger is \u202e0001\u202c dollars.\n\n"
    "An isolate \u2066isolated\u2069, a bell\x07 and a right-to-left mark\u200f in the quokka ledger.\n"
)


def test_bidi_overrides_and_control_characters_show_escaped(
    start_server: Callable[..., Any], open_tab: Callable[..., Any], tmp_path: Path
) -> None:
    """A note holding U+202E was shown raw: the page reordered the line ("Trojan Source"), as a
    terminal would have if kb did not escape it. Names and text now read \\u202e, as on the terminal."""
    notes = tmp_path / "bidi"
    notes.mkdir()
    (notes / "trojan.md").write_text(TROJAN_MD, encoding="utf-8")
    (notes / "evil\u202egpj.md").write_text("# Evil\n\nThis note's name reverses itself in the quokka ledger.\n")
    server = start_server()
    server.app.state.service.write(lambda kb: kb_core.ingest_paths(kb, [notes]))
    tab = open_tab(server)
    tab.goto()

    def raw_characters() -> bool:
        return bool(tab.page.evaluate(f"new RegExp('{BIDI_AND_CONTROLS}').test(document.body.textContent)"))

    tab.page.click("#tab-documents")
    tab.page.fill("#doc-filter", "gpj")
    expect(tab.page.locator("#doc-list a.doc-path")).to_have_text(["evil\\u202egpj.md"])
    tab.open_from(tab.page.locator("#doc-list a.doc-path"))
    expect(tab.page.locator("#viewer-path")).to_contain_text("evil\\u202egpj.md")
    assert not raw_characters()

    tab.page.fill("#doc-filter", "trojan")
    tab.open_from(tab.page.locator("#doc-list a.doc-path"))
    lines = tab.page.locator("#viewer-lines")
    expect(lines).to_contain_text("The total due to the quokka ledger is \\u202e0001\\u202c dollars.")
    expect(lines).to_contain_text("An isolate \\u2066isolated\\u2069, a bell\\x07 and a right-to-left mark\\u200f")
    assert not raw_characters()

    tab.page.click("#tab-search")
    tab.page.fill("#search-q", "total due quokka ledger")
    tab.page.select_option("#search-mode", "lexical")
    tab.page.press("#search-q", "Enter")
    expect(tab.page.locator("#hits .snippet").first).to_be_visible()
    expect(tab.page.locator("#hits")).to_contain_text("\\u202e")
    assert not raw_characters()

    tab.page.click("#tab-ask")
    tab.ask("What is the total due to the quokka ledger?")
    expect(tab.page.locator("#answer .verdict")).to_be_visible()
    assert not raw_characters()  # the streamed answer, its sources and their snippets too
    tab.check_clean()
