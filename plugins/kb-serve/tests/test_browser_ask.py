"""The page in a real browser (Debian's Chromium through Playwright): asking, streaming, stopping,
citations, refusals, Korean, the bearer token, and follow-up questions in a conversation. Every test
checks that the page asked nothing of any address but the server's, opened no dialog, raised no
script error and broke no CSP rule.

The README's picture (``docs/page.png``) is taken by ``scripts/page_picture.py``, not by a test.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from kb_core.plugin import GenerateRequest
from kb_core.testing import extractive, following_up

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[3] / "fixtures" / "corpus"
RELEASE = "When was Heliograph 2.3.0 released?"
WIND = "At what wind speed does Heliograph move the panels to the stow angle?"
OFF_TOPIC = "What is the capital of Mongolia's oldest bakery?"
KOREAN = "김치찌개는 몇 분 동안 끓이나요?"
TOKEN = "correct-horse-battery-staple"
DAEMON = "What does the Heliograph daemon do?"
FOLLOW_UP = "Which port does it listen on?"
TOPIC = "the Heliograph daemon"
CITED_TEXTS = "Array.from(document.querySelectorAll('#viewer-lines .line.cited')).map(r => r.textContent)"


def file_lines(path: str, start: int, end: int) -> list[str]:
    """Lines ``start``..``end`` of a corpus file."""
    return (CORPUS / path).read_text(encoding="utf-8").split("\n")[start - 1 : end]


def cited_range(href: str) -> tuple[str, int, int]:
    """(path, start, end) of a page link ``#/doc/PATH/Lstart-Lend``."""
    from urllib.parse import unquote

    _, _, encoded, lines = href.split("/")
    start, end = lines.removeprefix("L").split("-L")
    return unquote(encoded), int(start), int(end)


def test_a_grounded_answer_streams_in_and_its_citation_opens_the_cited_lines(
    start_server: Callable[..., Any], paced_llm: Any, extractive_script: Any, open_tab: Callable[..., Any]
) -> None:
    llm = paced_llm(script=extractive_script, pace_s=0.005, pause_after=4)  # four words, then wait for the test
    server = start_server(llm=llm)
    tab = open_tab(server)
    tab.goto()
    expect(tab.page.locator("#health")).to_contain_text("12 documents")
    tab.ask(RELEASE)
    assert llm.paused.wait(30)
    streaming = tab.page.locator("#answer .answer-text.streaming")
    expect(tab.page.locator("#stop-button")).to_be_visible()
    expect(streaming).to_have_text("")  # four words, no sentence checked yet: nothing unchecked is on screen
    assert tab.page.locator("#answer a.cite").count() == 0
    llm.resume.set()

    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded")
    expect(tab.page.locator("#answer .verdict")).to_contain_text("backed by a passage it cites")
    expect(tab.page.locator("#stop-button")).to_be_hidden()
    link = tab.page.locator("#answer .answer-text a.cite").first
    expect(link).to_have_text("[#1]")
    href = link.get_attribute("href")
    path, start, end = cited_range(href)
    assert path == "notes/CHANGELOG.txt"
    tab.page.hover("#answer .sentence.supported >> nth=0")  # the sentence lights the source that supports it
    expect(tab.page.locator("#answer li.source.lit")).to_have_count(1)
    expect(tab.page.locator("#answer li.source.lit")).to_contain_text("notes/CHANGELOG.txt")

    tab.open_from(link)
    expect(tab.page.locator("#viewer-path")).to_contain_text("notes/CHANGELOG.txt")
    expect(tab.page.locator("#viewer-where")).to_contain_text(f"lines {start}–{end}")
    expect(tab.page.locator("#viewer-lines .line.cited")).to_have_count(end - start + 1)
    assert tab.page.evaluate(CITED_TEXTS) == file_lines(path, start, end)
    assert tab.page.evaluate("location.hash") == href
    assert "2.3.0 (2024-06-18)" in " ".join(tab.page.evaluate(CITED_TEXTS))

    # an answer from a Markdown note opens its citation in its section (a new conversation)
    tab.page.click("#new-thread")
    tab.ask(WIND)
    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded")
    tab.open_from(tab.page.locator("#answer .answer-text a.cite").first)
    expect(tab.page.locator("#viewer-heading")).to_have_text("Heliograph › Operation › Wind protection")
    tab.check_clean()


def test_the_embedded_model_answers_on_the_page_with_its_citation_open(
    start_server: Callable[..., Any], open_tab: Callable[..., Any], embedded_model: None
) -> None:
    """What a user sees, the embedded default model answering (``scripts/page_picture.py`` takes its picture)."""
    server = start_server(backend="llamacpp")
    tab = open_tab(server)
    tab.goto()
    expect(tab.page.locator("#health")).to_contain_text("model: llamacpp")
    tab.ask(RELEASE)
    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded", timeout=240_000)
    link = tab.page.locator("#answer .answer-text a.cite").first
    path, start, end = cited_range(link.get_attribute("href"))
    assert path == "notes/CHANGELOG.txt"
    assert "2024" in tab.page.locator("#answer .answer-text").inner_text()  # 2.3.0 came out on 2024-06-18
    tab.open_from(link)
    expect(tab.page.locator("#viewer-lines .line.cited")).to_have_count(end - start + 1)
    assert tab.page.evaluate(CITED_TEXTS) == file_lines(path, start, end)
    tab.page.hover("#answer .sentence.supported >> nth=0")
    tab.check_clean()


def test_an_off_topic_question_is_refused_in_words_with_the_nearest_passages(
    start_server: Callable[..., Any], open_tab: Callable[..., Any]
) -> None:
    server = start_server()
    tab = open_tab(server)
    tab.goto()
    tab.ask(OFF_TOPIC)
    verdict = tab.page.locator("#answer .verdict")
    expect(verdict).to_contain_text("Refused")
    expect(verdict.locator(".reason")).to_contain_text("so kb did not ask the model")
    expect(tab.page.locator("#answer h3")).to_have_text(["Nearest passages"])
    candidates = tab.page.locator("#answer .candidates li")
    assert candidates.count() >= 1
    tab.open_from(candidates.first.locator("a.source-place"))
    expect(tab.page.locator("#viewer-lines .line.cited").first).to_be_visible()
    tab.check_clean()


#: An answer whose first sentence no passage supports: kb refuses it.
WITHDRAWN = "The daemon was written by Ada Lovelace in 1843 [#1]. It listens on TCP port 7341 [#1]."


def test_a_refused_answer_shows_its_refusal_and_none_of_the_models_text(
    start_server: Callable[..., Any], open_tab: Callable[..., Any]
) -> None:
    """Issue 44: neither while it streams nor once it is refused does the page show what the model wrote."""
    words = WITHDRAWN.split()
    server = start_server(script=lambda request: [w if i == 0 else f" {w}" for i, w in enumerate(words)])
    tab = open_tab(server)
    tab.goto()
    seen: list[str] = []
    tab.page.expose_function("noteAnswer", lambda text: seen.append(text))
    tab.page.evaluate(
        "new MutationObserver(() => noteAnswer(document.querySelector('#answer')?.innerText || ''))"
        ".observe(document.body, {childList: true, subtree: true, characterData: true})"
    )
    tab.ask("What TCP port does the Heliograph daemon listen on?")
    verdict = tab.page.locator("#answer .verdict")
    expect(verdict).to_contain_text("Refused")
    expect(verdict).to_contain_text("none of the passages supports")
    shown = tab.page.locator("#answer").inner_text()
    assert "Lovelace" not in shown and "7341" not in shown
    assert seen and not any("Lovelace" in text for text in seen)  # nor at any moment while it streamed
    tab.check_clean()


def test_stop_and_esc_abort_the_answer_and_the_server_stops_generating(
    start_server: Callable[..., Any], paced_llm: Any, open_tab: Callable[..., Any]
) -> None:
    llm = paced_llm(tokens=4000, pace_s=0.025)  # 100 s of answer unless it is stopped
    server = start_server(llm=llm)
    tab = open_tab(server)
    tab.goto()
    for stop in (lambda: tab.page.keyboard.press("Escape"), lambda: tab.page.click("#stop-button")):
        llm.closed.clear()
        tab.ask(RELEASE)
        expect(tab.page.locator("#stop-button")).to_be_visible()
        deadline = time.monotonic() + 60
        while llm.yielded <= 10 and time.monotonic() < deadline:  # the model writes ...
            time.sleep(0.05)
        assert llm.yielded > 10
        expect(tab.page.locator("#answer .answer-text")).not_to_contain_text("Wind")  # ... kb shows none of it
        stop()
        expect(tab.page.locator("#ask-state")).to_contain_text("Stopped")
        assert llm.closed.wait(60) and llm.yielded < llm.tokens, "the generation went on after the page stopped it"
        stopped_at = llm.yielded
        time.sleep(0.3)
        assert llm.yielded == stopped_at
        expect(tab.page.locator("#stop-button")).to_be_hidden()
    assert llm.yielded < 2 * llm.tokens
    with server.client() as http:
        assert http.get("/answers").json()["total"] == 0  # nothing stored for a stopped answer
    tab.check_clean()


def test_a_korean_question_is_answered_and_its_source_shown_in_korean(
    start_server: Callable[..., Any], open_tab: Callable[..., Any]
) -> None:
    server = start_server()
    tab = open_tab(server, width=520, height=800)  # narrow: Korean must wrap, not overflow
    tab.goto()
    tab.ask(KOREAN)
    expect(tab.page.locator("#answer .verdict")).to_be_visible()
    assert tab.page.get_attribute("#answer .question", "lang") == "ko"
    text = tab.page.locator("#answer .answer-text")
    assert text.get_attribute("lang") == "ko"
    assert text.evaluate("e => getComputedStyle(e).wordBreak") == "keep-all"
    link = tab.page.locator("#answer a.cite, #answer a.source-place").first
    path, start, end = cited_range(link.get_attribute("href"))
    assert path == "ko/김치찌개.md"
    tab.open_from(link)
    expect(tab.page.locator("#viewer-lines .line.cited")).to_have_count(end - start + 1)
    assert tab.page.get_attribute("#viewer-lines", "lang") == "ko"
    assert tab.page.evaluate(CITED_TEXTS) == file_lines(path, start, end)
    overflowing = tab.page.evaluate(
        "() => ['#answer', '#viewer-lines', 'body'].map(s => document.querySelector(s))"
        ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.id || e.tagName)"
    )
    assert overflowing == []
    tab.page.goto(server.url + "/#/doc/zh%2Fgreat-wall.txt/L1-L3")  # Chinese breaks between characters
    expect(tab.page.locator("#viewer-where")).to_contain_text("lines 1–3 · 9 lines in all")
    assert tab.page.get_attribute("#viewer-lines", "lang") == "zh"
    assert tab.page.locator("#viewer-lines").evaluate("e => getComputedStyle(e).wordBreak") == "normal"
    assert tab.page.evaluate("document.body.scrollWidth <= document.body.clientWidth")
    tab.check_clean()


def test_beyond_loopback_the_page_asks_for_the_token_once_and_sends_it(
    start_server: Callable[..., Any], open_tab: Callable[..., Any]
) -> None:
    server = start_server(token=TOKEN)
    tab = open_tab(server)
    tab.page.goto(server.url + "/")  # the page itself needs no token
    expect(tab.page.locator("#token-form")).to_be_visible()
    tab.page.fill("#token-input", "wrong")
    tab.page.click("#token-form button")
    expect(tab.page.locator("#token-error")).to_contain_text("the bearer token is wrong")
    tab.page.fill("#token-input", TOKEN)
    tab.page.click("#token-form button")
    expect(tab.page.locator("#token-form")).to_be_hidden()
    expect(tab.page.locator("#health")).to_contain_text("12 documents")
    tab.ask(RELEASE)
    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded")
    asked = [r for r in tab.requests if r.url.endswith("/threads?stream=1")]
    assert [r.headers.get("authorization") for r in asked] == [f"Bearer {TOKEN}"]
    assert tab.page.evaluate("sessionStorage.getItem('kb-serve-token')") == TOKEN
    tab.page.reload()
    expect(tab.page.locator("#health")).to_contain_text("12 documents")
    expect(tab.page.locator("#token-form")).to_be_hidden()  # asked once per tab
    tab.errors.clear()
    assert tab.foreign_requests() == [] and tab.dialogs == []


@pytest.mark.parametrize(
    ("no_share", "shown", "opening"),
    [
        (0.001, 'Verdict "Yes" stated with confidence 0.99', "Yes."),  # a sure model, passages that agree
        (0.09, 'Verdict withheld: the model leaned to "Yes" (confidence 0.10)', "The passages do not settle"),
    ],
)
def test_a_yes_no_answer_shows_its_verdict_or_says_it_was_withheld(
    start_server: Callable[..., Any], open_tab: Callable[..., Any], no_share: float, shown: str, opening: str
) -> None:
    from kb_core.testing import ScriptedPlugin

    server = start_server(
        llm=ScriptedPlugin(lambda request: ["Yes.", " ", *extractive(request)], verdict_no_share=no_share)
    )
    tab = open_tab(server)
    tab.goto()
    tab.ask("Did Heliograph 2.3.0 come out in 2024?")
    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded")
    expect(tab.page.locator("#answer .verdict .yes-no")).to_contain_text(shown)
    expect(tab.page.locator("#answer .answer-text")).to_contain_text(opening)


def test_a_follow_up_shows_what_kb_searched_for_below_the_turn_before(
    start_server: Callable[..., Any], open_tab: Callable[..., Any]
) -> None:
    release = threading.Event()
    release.set()

    def answer_when_released(request: GenerateRequest) -> list[str]:
        release.wait(30)
        return extractive(request)

    server = start_server(script=following_up(TOPIC, answer_when_released))
    tab = open_tab(server)
    tab.goto()
    expect(tab.page.locator("#new-thread")).to_be_hidden()
    tab.ask(DAEMON)
    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded")
    expect(tab.page.locator("#answer .searched")).to_have_count(0)  # a first question is searched as asked
    expect(tab.page.locator("#new-thread")).to_be_visible()
    expect(tab.page.locator("#question")).to_have_attribute("placeholder", "Ask a follow-up question")
    expect(tab.page.locator("#question")).to_have_value("")

    release.clear()  # the answer waits: what kb searched for shows before it (the stream's standalone event)
    tab.ask(FOLLOW_UP)
    expect(tab.page.locator("#answer .searched")).to_have_text(f"searched for: {FOLLOW_UP} ({TOPIC})")
    expect(tab.page.locator("#answer .answer-text.streaming")).to_have_text("")
    release.set()
    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded")
    expect(tab.page.locator("#answer .question")).to_have_text(FOLLOW_UP)
    expect(tab.page.locator("#answer .searched")).to_have_text(f"searched for: {FOLLOW_UP} ({TOPIC})")
    expect(tab.page.locator("#answer .answer-text")).to_contain_text("7341")
    expect(tab.page.locator("#earlier .question")).to_have_text([DAEMON])  # the turn before stays, above
    expect(tab.page.locator("#earlier .verdict")).to_have_count(1)
    with server.client() as http:
        threads = http.get("/threads").json()["threads"]
    assert [(t["turns"], t["first_question"]) for t in threads] == [(2, DAEMON)]
    posted = [r.url.removeprefix(server.url) for r in tab.requests if r.method == "POST"]
    assert posted == ["/threads?stream=1", f"/threads/{threads[0]['thread_id']}/ask?stream=1"]
    tab.open_from(tab.page.locator("#earlier a.cite").first)  # an earlier turn's citation still opens
    expect(tab.page.locator("#viewer-path")).to_contain_text("notes/heliograph.md")

    tab.page.click("#new-thread")  # start over: the next question starts a thread of its own
    expect(tab.page.locator("#earlier")).to_be_hidden()
    expect(tab.page.locator("#answer")).to_be_hidden()
    expect(tab.page.locator("#new-thread")).to_be_hidden()
    tab.ask(RELEASE)
    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded")
    expect(tab.page.locator("#earlier")).to_be_hidden()
    with server.client() as http:
        assert [t["turns"] for t in http.get("/threads").json()["threads"]] == [1, 2]
    tab.check_clean()


def test_what_kb_searched_for_is_shown_as_text_even_when_it_holds_markup(
    start_server: Callable[..., Any], open_tab: Callable[..., Any]
) -> None:
    hostile = "<img src=x onerror=window.__pwned=1> the Heliograph daemon"
    server = start_server(script=following_up(hostile))
    tab = open_tab(server)
    tab.goto()
    tab.ask(DAEMON)
    expect(tab.page.locator("#answer .verdict")).to_be_visible()
    tab.ask(FOLLOW_UP)
    expect(tab.page.locator("#answer .searched")).to_contain_text(f"({hostile})")
    assert tab.page.locator("#panel-ask img").count() == 0
    assert tab.page.evaluate("window.__pwned") is None
    tab.check_clean()
