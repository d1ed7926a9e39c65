"""Markdown: CommonMark plus tables (markdown-it-py), with frontmatter."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token as MdToken

from kb_core.builtin.parsers.blocks import (
    MAX_HEADING_CHARS,
    Content,
    Heading,
    assemble,
    clip,
    file_name,
    split_lines,
)
from kb_core.builtin.parsers.frontmatter import frontmatter_title, read_frontmatter
from kb_core.types import ParsedDocument

_MD_KINDS = {
    "paragraph_open": "paragraph",
    "fence": "code",
    "code_block": "code",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "blockquote_open": "quote",
    "table_open": "table",
    "html_block": "html",
}


class MarkdownParser:
    """CommonMark plus tables (markdown-it-py), with YAML or TOML frontmatter.

    Top-level blocks keep their source text verbatim: fenced code and tables stay whole, a list
    is one block, and ATX and setext headings (never those inside code) set the heading path.
    """

    def __init__(self) -> None:
        self._blocks = MarkdownIt("commonmark").enable("table").disable("inline")
        self._inline = MarkdownIt("commonmark")

    def parse(self, text: str, path: str) -> ParsedDocument:
        """Parse Markdown ``text``; ``path`` names the document when it has no title."""
        lines = split_lines(text)
        front = read_frontmatter(lines)
        body = [""] * front.line_count + lines[front.line_count :]
        tokens = self._blocks.parse("\n".join(body).removeprefix("\ufeff"))  # a byte-order mark hides a heading
        items = list(self._items(tokens, body))
        first_h1 = next((i.title for i in items if isinstance(i, Heading) and i.level == 1), "")
        title = frontmatter_title(front.metadata) or first_h1 or file_name(path)
        warnings = (front.warning,) if front.warning else ()
        return ParsedDocument(title, tuple(assemble(items, body)), front.metadata, warnings)

    def _items(self, tokens: Sequence[MdToken], lines: Sequence[str]) -> Iterable[Heading | Content]:
        for index, token in enumerate(tokens):
            if token.level != 0 or token.map is None or token.nesting == -1:
                continue
            start, end = _trim_blank(lines, token.map[0] + 1, min(token.map[1], len(lines)))
            if start > end:
                continue
            source = "\n".join(lines[start - 1 : end])
            if token.type == "heading_open":
                title = clip(self._plain(tokens[index + 1].content), MAX_HEADING_CHARS)
                if title:
                    yield Heading(int(token.tag[1:]), title, source, start, end)
            elif token.type in _MD_KINDS:
                yield Content(_MD_KINDS[token.type], source, start, end)

    def _plain(self, inline_source: str) -> str:
        """The visible text of an inline Markdown snippet (a heading)."""
        return "".join(_inline_texts(self._inline.parseInline(inline_source)))


def _inline_texts(tokens: Sequence[MdToken]) -> Iterable[str]:
    for token in tokens:
        if token.children:
            yield from _inline_texts(token.children)
        elif token.type in ("text", "code_inline"):
            yield token.content
        elif token.type in ("softbreak", "hardbreak"):
            yield " "


def _trim_blank(lines: Sequence[str], start: int, end: int) -> tuple[int, int]:
    """Shrink the 1-based inclusive span ``start..end`` past blank lines at both ends."""
    while start <= end and not lines[start - 1].strip():
        start += 1
    while end >= start and not lines[end - 1].strip():
        end -= 1
    return start, end
