"""The page's files and headers, and the endpoints it reads: a document's text, the stored answers.

(The page in a real browser: test_browser_*.py.)
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import jsonschema
import pytest

from kb_core.bounds import LIST_LIMIT
from kb_core.testing import default_ctrl_c
from kb_serve import running
from kb_serve.openapi import kb_schema, own_schema
from kb_serve.webpage import API_CSP, PAGE_CSP, load_assets

CORPUS = Path(__file__).resolve().parents[3] / "fixtures" / "corpus"
PAGE_BUDGET_BYTES = 150_000
#: What no page script may do: parse HTML, run strings as code, set inline styles, or make URLs of data.
FORBIDDEN_JS = [
    r"innerHTML",
    r"outerHTML",
    r"insertAdjacentHTML",
    r"document\.write",
    r"\beval\(",
    r"new Function",
    r"\.style\.",
    r"setAttribute\(\s*[\"'](?:style|on\w+|src|srcdoc)",
    r"javascript:",
    r"https?://(?!www\.w3\.org/2000/svg\")",  # (the SVG namespace is a name, never fetched)
    r"createContextualFragment",
    r"DOMParser",
]


class Markup(HTMLParser):
    """The tags and attributes of a page, and any text inside <script> or <style>."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.inline: list[str] = []
        self._open = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._open = tag

    def handle_data(self, data: str) -> None:
        if self._open in ("script", "style") and data.strip():
            self.inline.append(data)

    def handle_endtag(self, tag: str) -> None:
        self._open = ""


def test_the_page_and_its_assets_carry_a_strict_csp_and_no_inline_code(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        page = http.get("/")
        assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
        markup = Markup()
        markup.feed(page.text)
        assert markup.inline == []
        assert {tag for tag, _ in markup.tags} >= {"html", "head", "body", "main", "script", "link"}
        for tag, attributes in markup.tags:
            assert "style" not in attributes and tag != "style", tag
            assert not any(name.startswith("on") for name in attributes), (tag, attributes)
        scripts = [a for t, a in markup.tags if t == "script"]
        assert scripts == [{"type": "module", "src": "/page/js/main.js"}]
        linked = [a["href"] for t, a in markup.tags if t == "link"] + [a["src"] for a in scripts]
        assets = set(load_assets())
        weight = len(page.content)
        for url in ["/", *sorted(assets - {"/"})]:
            reply = http.get(url)
            assert reply.status_code == 200, url
            assert reply.headers["content-security-policy"] == PAGE_CSP
            assert reply.headers["x-content-type-options"] == "nosniff"
            assert reply.headers["referrer-policy"] == "no-referrer"
            assert http.get(url, headers={"If-None-Match": reply.headers["etag"]}).status_code == 304
            if url.endswith(".js"):
                assert reply.headers["content-type"] == "text/javascript; charset=utf-8"
                for module in re.findall(r"from \"\./([\w-]+\.js)\"", reply.text):
                    assert f"/page/js/{module}" in assets, (url, module)
            weight += len(reply.content) if url != "/" else 0
        assert set(linked) <= assets
        assert weight < PAGE_BUDGET_BYTES, f"the page weighs {weight} bytes"
        for missing in ("/page/nope.js", "/page/../kb.sqlite3", "/page/js/../../kb.sqlite3", "/page/"):
            reply = http.get(missing)
            assert reply.status_code == 404, missing
            assert reply.headers["content-security-policy"] == API_CSP


def test_no_page_script_parses_html_or_runs_strings() -> None:
    for url, asset in load_assets().items():
        text = asset.body.decode("utf-8")
        if url.endswith(".js"):
            # (comments may name them; line comments stripped line by line: with re.S, "//.*$" once took the
            # whole rest of every module from its first comment, so these checks saw almost nothing)
            code = re.sub(r"/\*.*?\*/", "", re.sub(r"^\s*//.*$", "", text, flags=re.M), flags=re.S)
            for pattern in FORBIDDEN_JS:
                assert not re.search(pattern, code), (url, pattern)
        if url.endswith(".css"):
            assert "@import" not in text and "url(" not in text, url  # nothing fetched, fonts included
        if url.endswith(".html"):
            assert "http://" not in text and "https://" not in text, url


def test_only_api_js_reads_a_responses_json_body() -> None:
    readers = sorted(url for url, asset in load_assets().items() if url.endswith(".js") and b".json()" in asset.body)
    assert readers == ["/page/js/api.js"]  # the others use its getJSON, checked or ApiError


def test_every_response_carries_the_security_headers(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        replies = [
            http.get("/health"),
            http.get("/nowhere"),
            http.get("/health", headers={"Host": "attacker.example"}),  # 421 from the outermost guard
            http.post("/ask", content=b"{}", headers={"Content-Type": "text/plain"}),
        ]
    assert [r.status_code for r in replies] == [200, 404, 421, 415]
    for reply in replies:
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert reply.headers["referrer-policy"] == "no-referrer"
        assert reply.headers["cross-origin-resource-policy"] == "same-origin"
        assert reply.headers["content-security-policy"] == API_CSP


def test_with_a_token_the_page_needs_none_and_everything_else_does(start_server: Callable[..., Any]) -> None:
    server = start_server(token="s3cret-token")
    with httpx.Client(base_url=server.url, timeout=30) as anonymous:
        assert anonymous.get("/").status_code == 200
        assert anonymous.head("/page/js/main.js").status_code == 200
        assert anonymous.get("/page/nope.js").status_code == 404  # a file of the page, or nothing
        for method, path in (("GET", "/health"), ("POST", "/"), ("GET", "/answers"), ("GET", "/documents/a.md")):
            assert anonymous.request(method, path).status_code == 401, (method, path)


def file_lines(path: str) -> list[str]:
    return (CORPUS / path).read_text(encoding="utf-8").splitlines()


def test_a_document_reads_back_line_by_line_from_the_store(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        changelog = http.get("/documents/notes/CHANGELOG.txt").json()
        jsonschema.validate(changelog, own_schema("document_text.v1"))
        assert changelog["lines"] == file_lines("notes/CHANGELOG.txt") and changelog["exact"] is True

        guide = http.get("/documents/notes/heliograph.md").json()
        source = file_lines("notes/heliograph.md")
        assert guide["exact"] is True and guide["line_count"] == len(source)
        assert guide["lines"][:9] == [None] * 9  # the front matter is not kept
        assert all(line is None or line == source[i] for i, line in enumerate(guide["lines"]))
        assert sum(line is not None for line in guide["lines"]) > 40
        assert {"start_line": 53, "end_line": 56, "heading_path": ["Heliograph", "Operation", "Wind protection"]} in (
            guide["sections"]
        )

        korean = http.get("/documents/" + quote("ko/김치찌개.md")).json()
        assert korean["lang"] == "ko" and korean["path"] == "ko/김치찌개.md"
        assert all(line is None or line == file_lines("ko/김치찌개.md")[i] for i, line in enumerate(korean["lines"]))

        html = http.get("/documents/web/tomatoes.html").json()
        jsonschema.validate(html, own_schema("document_text.v1"))
        assert html["exact"] is False and html["lang"] == "en"
        assert html["lines"][18] == "Growing tomatoes"  # the extracted text, at the lines it came from

        for path, status in (("nope.md", 404), ("notes/", 404), ("a" * 2000, 400), ("notes/CHANGELOG.txt%230", 404)):
            reply = http.get(f"/documents/{path}")
            assert reply.status_code == status, path
            jsonschema.validate(reply.json(), own_schema("error"))
        for reply in (http.get("/documents/notes/CHANGELOG.txt"), http.get("/documents/nope.md")):
            assert str(server.kb_dir) not in reply.text and str(CORPUS) not in reply.text


def test_stored_answers_are_listed_newest_first_and_reopen_with_their_citations(
    start_server: Callable[..., Any],
) -> None:
    server = start_server()
    with server.client() as http:
        assert http.get("/answers").json() == {"schema_version": "answer_history.v1", "answers": [], "total": 0}
        refused = http.post("/ask", json={"question": "What is the capital of Mongolia's oldest bakery?"}).json()
        grounded = http.post("/ask", json={"question": "When was Heliograph 2.3.0 released?"}).json()
        history = http.get("/answers").json()
        jsonschema.validate(history, kb_schema("answer_history.v1"))
        assert [a["answer_id"] for a in history["answers"]] == [grounded["answer_id"], refused["answer_id"]]
        assert history["total"] == 2 and len(http.get("/answers", params={"limit": 1}).json()["answers"]) == 1

        stored = http.get(f"/answers/{grounded['answer_id']}").json()
        jsonschema.validate(stored, own_schema("stored_answer.v1"))
        assert stored["answer"] == grounded["answer"] and stored["grounded"] is True
        assert [c["citation"] for c in stored["citations"]] == [c["citation"] for c in grounded["citations"]]
        assert "model" not in stored and str(server.kb_dir) not in json.dumps(stored)  # no local paths

        assert http.get("/answers/ans_0000000000000000").status_code == 404
        assert http.get("/answers/not-an-id").status_code == 404
        for limit in ("0", str(int(LIST_LIMIT.high) + 1), "x", "-1"):
            assert http.get("/answers", params={"limit": limit}).status_code == 400, limit


def test_open_page_opens_the_browser_and_says_so_when_it_cannot(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opened: list[str] = []
    done = threading.Event()

    def fake_open(url: str) -> bool:
        opened.append(url)
        done.set()
        return len(opened) == 1

    monkeypatch.setattr(running.webbrowser, "open", fake_open)
    running.open_page("http://127.0.0.1:8765/")
    assert done.wait(10) and opened == ["http://127.0.0.1:8765/"]
    done.clear()
    running.open_page("http://127.0.0.1:8765/")
    assert done.wait(10)
    for thread in threading.enumerate():
        if thread.name == "kb-serve-open":
            thread.join(10)
    assert "could not open a browser" in capsys.readouterr().err


@pytest.mark.slow
def test_kb_serve_prints_the_url_and_open_opens_the_page(corpus_kb: Path, tmp_path: Path) -> None:
    record = tmp_path / "opened.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(f"import sys, pathlib\npathlib.Path({str(record)!r}).write_text(sys.argv[1])\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")} | {
        "BROWSER": f"{sys.executable} {browser} %s"
    }
    kb = str(Path(sys.executable).parent / "kb")
    process = subprocess.Popen(
        [kb, "--kb", str(corpus_kb), "serve", "--port", "0", "--open"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=default_ctrl_c,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.match(r"kb serve: listening on (http://127\.0\.0\.1:\d+) \(open it in a browser", line)
        assert match, line
        url = match.group(1) + "/"
        for _ in range(200):
            if record.exists() and record.read_text():
                break
            threading.Event().wait(0.05)
        assert record.read_text() == url
        page = httpx.get(url, timeout=30)
        assert page.status_code == 200 and '<script type="module" src="/page/js/main.js">' in page.text
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_stored_answer_shows_when_the_notes_it_cites_changed(start_server: Callable[..., Any]) -> None:
    server = start_server()
    note = b"# Kiwi rota\n\nThe kiwi rota of the zanzibar team starts on Mondays at nine.\n"
    with server.client() as http:
        assert http.post("/documents", files={"file": ("kiwi.md", note, "text/markdown")}).status_code == 200
        answer = http.post("/ask", json={"question": "When does the kiwi rota of the zanzibar team start?"}).json()
        assert answer["grounded"] and answer["citations"][0]["citation"]["path"].endswith("kiwi.md")
        assert http.get(f"/answers/{answer['answer_id']}").json()["state"] == "valid"
        changed = note.replace(b"Mondays", b"Tuesdays")
        assert http.post("/documents", files={"file": ("kiwi.md", changed, "text/markdown")}).status_code == 200
        stored = http.get(f"/answers/{answer['answer_id']}").json()
        jsonschema.validate(stored, own_schema("stored_answer.v1"))
        (citation,) = stored["citations"]
        assert stored["state"] == "stale" and citation["now"]["reason"] == "changed"
        assert "Tuesdays" in citation["now"]["now_text"]
        listed = http.get("/answers").json()["answers"]
        assert [(a["answer_id"], a["state"]) for a in listed] == [(answer["answer_id"], "stale")]
