"""HTML: the visible text of block elements, with headings, through the standard library's HTML parser."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser as _StdlibHTMLParser
from typing import Any

import attrs

from kb_core.builtin.parsers.blocks import (
    MAX_HEADING_CHARS,
    MAX_LIST_INDENT,
    MAX_TITLE_CHARS,
    NEWLINE,
    SPACES,
    Content,
    Heading,
    assemble,
    clip,
    file_name,
)
from kb_core.builtin.parsers.html_tables import Table, colspan_of
from kb_core.types import ParsedDocument

_SKIPPED_TAGS = frozenset({"script", "style", "nav", "noscript", "template", "svg", "iframe", "object"})
_VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
)
_BLOCK_TAGS = frozenset(
    {"address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "dialog", "div", "dl", "dt"}
    | {"fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup", "hr", "html", "li", "main", "nav"}
    | {"ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"}
    | {"h1", "h2", "h3", "h4", "h5", "h6"}
)
_LEAF_KINDS = {"p": "paragraph", "figcaption": "paragraph", "summary": "paragraph", "address": "paragraph"} | {
    f"h{n}": "heading" for n in range(1, 7)
}
_CONTAINER_KINDS = {"pre": "code", "table": "table", "blockquote": "quote", "ul": "list", "ol": "list", "dl": "list"}
_META_NAMES = ("description", "keywords", "author")


_IMPLIED_SIBLINGS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "li": (frozenset({"li"}), frozenset({"ul", "ol"})),
    "dt": (frozenset({"dt", "dd"}), frozenset({"dl"})),
    "dd": (frozenset({"dt", "dd"}), frozenset({"dl"})),
    "tr": (frozenset({"tr"}), frozenset({"table"})),
    "td": (frozenset({"td", "th"}), frozenset({"tr", "table"})),
    "th": (frozenset({"td", "th"}), frozenset({"tr", "table"})),
}
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")


@attrs.define
class _Capture:
    """Text being collected for one HTML block, line by line (each line a list of parts)."""

    tag: str
    kind: str
    depth: int  # index of the element in the open-element stack; -1 for loose text
    start_line: int
    last_line: int
    preformatted: bool = False
    seen_text: bool = False
    outer_lists: int = 0  # <ul>/<ol> elements open outside this block
    lines: list[list[str]] = attrs.field(factory=lambda: [[]])
    line_has_text: bool = False
    prefix: str = ""
    table: Table | None = None  # the rows, when the block is a <table>

    def add(self, text: str, first_line: int, last_line: int) -> None:
        """Append text found on lines ``first_line..last_line``; the span follows the visible text."""
        if text.strip():
            self.start_line = self.start_line if self.seen_text else first_line
            self.last_line = max(self.last_line, last_line)
            self.seen_text = True
        if self.table is not None:
            self.table.add(text, first_line, last_line)
            return
        if self.preformatted:
            self.lines[-1].append(text)
            return
        text = SPACES.sub(" ", text)
        if text.strip() and not self.line_has_text:
            self.lines[-1] = [self.prefix, text.lstrip()]
            self.prefix, self.line_has_text = "", True
        elif self.line_has_text:
            self.lines[-1].append(text)

    def newline(self, prefix: str = "") -> None:
        """Start a new line of text (an item, a row, a paragraph inside a container)."""
        if self.preformatted:
            self.lines[-1].append("\n")
        elif self.line_has_text:
            self.lines.append([])
            self.line_has_text = False
        self.prefix = prefix

    def add_cell(self) -> None:
        """Separate table cells on one row."""
        if self.line_has_text:
            self.lines[-1].append(" | ")

    def text(self) -> str:
        """The collected text: verbatim for ``<pre>``, one tidy line per line otherwise."""
        if self.preformatted:
            return _LEADING_BLANK_LINES.sub("", "".join(self.lines[0])).rstrip()
        joined = ("".join(parts) for parts in self.lines)
        return "\n".join(_indent(line) + SPACES.sub(" ", line.strip()) for line in joined if line.strip())


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


@attrs.define
class _OpenElements:
    """The stack of open HTML elements, with counts so lookups stay cheap on deep or broken markup."""

    tags: list[str] = attrs.field(factory=list)
    counts: dict[str, int] = attrs.field(factory=dict)

    def __len__(self) -> int:
        return len(self.tags)

    def push(self, tag: str) -> None:
        """Open ``tag``."""
        self.tags.append(tag)
        self.counts[tag] = self.counts.get(tag, 0) + 1

    def pop_from(self, index: int) -> list[str]:
        """Close the elements from ``index`` up; return them, outermost first."""
        popped = self.tags[index:]
        del self.tags[index:]
        for tag in popped:
            self.counts[tag] -= 1
        return popped

    def count(self, *tags: str) -> int:
        """How many of ``tags`` are open."""
        return sum(self.counts.get(t, 0) for t in tags)

    def last_index(self, tag: str) -> int | None:
        """The index of the innermost open ``tag``, if any."""
        if not self.count(tag):
            return None
        return len(self.tags) - 1 - self.tags[::-1].index(tag)

    def implied_end(self, tag: str) -> int | None:
        """The index of an open sibling that ``tag`` implicitly ends (``<li>`` ends an open ``<li>``)."""
        siblings, boundaries = _IMPLIED_SIBLINGS.get(tag, (frozenset(), frozenset()))
        if not self.count(*siblings):
            return None
        for index in range(len(self.tags) - 1, -1, -1):
            if self.tags[index] in siblings:
                return index
            if self.tags[index] in boundaries:
                return None
        return None

    @property
    def skipping(self) -> bool:
        """Inside an element whose text is dropped (script, style, nav ...)."""
        return self.count(*_SKIPPED_TAGS) > 0


class _HtmlCollector(_StdlibHTMLParser):
    """Walks HTML events (with exact source lines) and collects headings and content blocks.

    Keeps its own stack of open elements, closing elements the way browsers imply (a block
    tag ends an open ``<p>``, an ``<li>`` ends the previous one), so unbalanced markup still
    gives sensible blocks.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.items: list[Heading | Content] = []
        self.metadata: dict[str, Any] = {}
        self.title = ""
        self._open = _OpenElements()
        self._capture: _Capture | None = None
        self._loose: _Capture | None = None
        self._title_parts: list[str] | None = None

    # events -----------------------------------------------------------------------------------

    def handle_starttag(self, tag: str, attributes: list[tuple[str, str | None]]) -> None:
        line = self.getpos()[0]
        self._read_attributes(tag, dict(attributes))
        capture = self._capture
        if not self._open.skipping and tag in _BLOCK_TAGS and capture and capture.tag in _LEAF_KINDS:
            self._close_elements(capture.depth)  # a block tag ends an open <p> or <hN>
        sibling = self._open.implied_end(tag)
        if sibling is not None:
            self._close_elements(sibling)
        if tag not in _VOID_TAGS:
            self._open.push(tag)
        if tag == "title":
            self._title_parts = []
        if self._open.skipping:
            return
        if self._capture is not None:
            self._structure_inside(tag, attributes)
        elif tag == "br" and self._loose is not None:
            self._loose.newline()
        elif tag in _BLOCK_TAGS:
            self._flush_loose()
        if self._capture is None and (tag in _LEAF_KINDS or tag in _CONTAINER_KINDS):
            kind = _LEAF_KINDS.get(tag) or _CONTAINER_KINDS[tag]
            outer_lists = self._open.count("ul", "ol") - (tag in ("ul", "ol"))
            self._capture = _Capture(tag, kind, len(self._open) - 1, line, line, tag == "pre", outer_lists=outer_lists)
            if tag == "table":
                self._capture.table = Table(self._open.count("table") - 1)

    def handle_endtag(self, tag: str) -> None:
        index = self._open.last_index(tag)
        if index is None:
            return
        self._close_elements(index)
        table = self._capture.table if self._capture is not None else None
        if table is not None:
            if tag == "tr" and self._open.count("table") - table.outer_tables == 1:
                table.row()
            elif tag == "caption":
                table.in_caption = False
            elif tag in _BLOCK_TAGS:
                table.add(" ")
        elif self._capture is not None and tag in _BLOCK_TAGS and tag not in ("td", "th"):
            self._capture.newline()
        elif self._capture is None and tag in _BLOCK_TAGS:
            self._flush_loose()

    def handle_data(self, data: str) -> None:
        line = self.getpos()[0]
        stripped = data.strip()
        first = line + data[: len(data) - len(data.lstrip())].count("\n")
        last = line + data[: len(data.rstrip())].count("\n")
        self._text(data, first if stripped else line, last if stripped else line)

    def handle_entityref(self, name: str) -> None:
        line = self.getpos()[0]
        self._text(html.unescape(f"&{name};"), line, line)

    def handle_charref(self, name: str) -> None:
        line = self.getpos()[0]
        self._text(html.unescape(f"&#{name};"), line, line)

    def close(self) -> None:
        """Finish parsing and close whatever is still open."""
        super().close()
        if self._capture is not None:
            self._close_capture()
        self._flush_loose()
        if self._title_parts is not None and not self.title:
            self.title = clip("".join(self._title_parts), MAX_TITLE_CHARS)

    # helpers ----------------------------------------------------------------------------------

    def _read_attributes(self, tag: str, attributes: dict[str, str | None]) -> None:
        if tag == "html" and attributes.get("lang"):
            self.metadata.setdefault("lang", attributes["lang"])
        name = (attributes.get("name") or "").lower()
        if tag == "meta" and name in _META_NAMES and attributes.get("content"):
            self.metadata.setdefault(name, attributes["content"])

    def _text(self, text: str, first_line: int, last_line: int) -> None:
        if self._title_parts is not None:
            self._title_parts.append(text)
            return
        if self._open.skipping:
            return
        if self._capture is not None:
            self._capture.add(text, first_line, last_line)
        elif text.strip():
            if self._loose is None:
                self._loose = _Capture("", "paragraph", -1, first_line, first_line)
            self._loose.add(text, first_line, last_line)

    def _structure_inside(self, tag: str, attributes: list[tuple[str, str | None]]) -> None:
        """Line breaks, list bullets and cell separators inside the block being collected."""
        assert self._capture is not None
        table = self._capture.table
        if table is not None:
            own = self._open.count("table") - table.outer_tables == 1  # not a table nested in a cell
            if own and tag == "tr":
                table.row()
            elif own and tag in ("td", "th"):
                table.cell(colspan_of(dict(attributes).get("colspan")))
            elif own and tag == "caption":
                table.in_caption = True
            elif tag in _BLOCK_TAGS or tag == "br":
                table.add(" ")  # a paragraph or a line break inside a cell: the row stays one line
            return
        if tag in ("td", "th"):
            self._capture.add_cell()
        elif tag == "li":
            depth = self._open.count("ul", "ol") - self._capture.outer_lists - 1
            self._capture.newline("  " * min(max(depth, 0), MAX_LIST_INDENT) + "- ")
        elif tag in _BLOCK_TAGS or tag == "br":
            self._capture.newline()

    def _close_elements(self, index: int) -> None:
        """Close the open elements from ``index`` up, ending the title or the block they hold."""
        popped = self._open.pop_from(index)
        if self._title_parts is not None and "title" in popped:
            self.title = self.title or clip("".join(self._title_parts), MAX_TITLE_CHARS)
            self._title_parts = None
        if self._capture is not None and self._capture.depth >= index:
            self._close_capture()

    def _close_capture(self) -> None:
        capture, self._capture = self._capture, None
        assert capture is not None
        self._emit(capture)

    def _flush_loose(self) -> None:
        if self._loose is not None:
            loose, self._loose = self._loose, None
            self._emit(loose)

    def _emit(self, capture: _Capture) -> None:
        """Record a finished block; its span runs from its first to its last line of text.

        A table's caption becomes a paragraph of its own before it, so the table's first line is its header row.
        """
        table = capture.table
        if table is not None:
            caption, rows, spans = table.text()
            found: list[Content] = []
            if caption and table.caption_lines:
                found.append(Content("paragraph", caption, *table.caption_lines))
            if rows:  # (its first row's first line to the last line of any row)
                found.append(Content("table", rows, spans[0][0], max(last for _, last in spans), line_spans=spans))
            self.items.extend(sorted(found, key=lambda c: c.start_line))
            return
        text = capture.text()
        if not text:
            return
        if capture.kind == "heading":
            title = clip(text, MAX_HEADING_CHARS)
            self.items.append(Heading(int(capture.tag[1]), title, title, capture.start_line, capture.last_line))
        else:
            self.items.append(Content(capture.kind, text, capture.start_line, capture.last_line))


def _defuse(source: str) -> str:
    """Rewrite the markup that trips the standard library's HTML tokenizer, keeping every line.

    Marked sections (``<![if ...]>``) make it raise; a comment that is never closed, and tags
    opened after the last ``>``, make it rescan to the end of the text for each one (quadratic
    time). An unclosed comment runs to the end of the document, as browsers read it; a ``<``
    after the last ``>`` can only be text.
    """
    source = source.replace("<![", "<!_[")
    last_close = source.rfind("-->")
    unclosed = source.find("<!--", last_close + 3 if last_close >= 0 else 0)
    if unclosed >= 0:
        source = source[:unclosed]
    last_gt = source.rfind(">")
    return source[: last_gt + 1] + source[last_gt + 1 :].replace("<", "&lt;")


class HtmlParser:
    """HTML through the standard library's tolerant tokenizer, with exact source line spans.

    Headings ``<h1>``-``<h6>`` set the heading path; paragraphs, lists, ``<pre>``, tables and
    block quotes become blocks; script, style, nav and similar elements are dropped. A block's
    span runs from its first to its last line of visible text (not its tags); several blocks on
    one source line share that line, so a block may start on the line where the previous one ends.
    """

    def parse(self, text: str, path: str) -> ParsedDocument:
        """Parse HTML ``text``; the title comes from ``<title>``, else the first ``<h1>``."""
        collector = _HtmlCollector()
        warnings: list[str] = []
        source = _defuse(NEWLINE.sub("\n", text).removeprefix("\ufeff"))
        try:
            collector.feed(source)
            collector.close()
        except Exception as exc:  # noqa: BLE001 - html.parser asserts on some malformed declarations
            warnings.append(f"HTML parsing stopped early: {exc}")
        first_h1 = next((i.title for i in collector.items if isinstance(i, Heading) and i.level == 1), "")
        title = collector.title or first_h1 or file_name(path)
        blocks = tuple(assemble(collector.items))
        return ParsedDocument(title, blocks, collector.metadata, tuple(warnings))
