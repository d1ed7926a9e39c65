"""Built-in document parsers: plain text, Markdown (with YAML/TOML frontmatter) and HTML.

Every parser turns decoded text into a :class:`~kb_core.types.ParsedDocument` and never raises.
Line numbers are 1-based and count the lines of the original text as :func:`split_lines` does
(``\\r\\n``, ``\\r`` and ``\\n`` end a line, nothing else), so ``path#L12-L34`` points at the
same lines an editor shows.

A heading is folded into the block that follows it (the block's span and text start at the
heading line), so a chunk never cites a passage without the heading that introduces it; a
heading with no content of its own before the next heading of the same or a higher level
becomes a block of kind ``"heading"``.
"""

from __future__ import annotations

import datetime
import html
import re
import tomllib
from collections.abc import Iterable, Sequence
from html.parser import HTMLParser as _StdlibHTMLParser
from pathlib import PurePosixPath
from typing import Any

import attrs
import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token as MdToken

from kb_core import hookimpl
from kb_core.types import Block, ParsedDocument

MAX_TITLE_CHARS = 200
MAX_HEADING_CHARS = 200
MAX_LIST_INDENT = 8
_NEWLINE = re.compile(r"\r\n|\r|\n")
_SPACES = re.compile(r"\s+")


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` as kb numbers them: split on ``\\r\\n``, ``\\r`` or ``\\n`` only."""
    lines = _NEWLINE.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _file_name(path: str) -> str:
    return PurePosixPath(path.replace("\\", "/")).name or path or "untitled"


def _clip(text: str, limit: int) -> str:
    return _SPACES.sub(" ", text.replace("\ufeff", "")).strip()[:limit].rstrip()


# ---------------------------------------------------------------------------------------------
# Headings and blocks, shared by the Markdown and HTML parsers


@attrs.frozen
class _Heading:
    """A heading found by a parser, before it is folded into the block that follows it."""

    level: int
    title: str
    text: str
    start_line: int
    end_line: int


@attrs.frozen
class _Content:
    """A content block found by a parser, before heading paths are attached."""

    kind: str
    text: str
    start_line: int
    end_line: int


def _assemble(items: Iterable[_Heading | _Content], source_lines: Sequence[str] | None = None) -> list[Block]:
    """Attach heading paths and fold each run of headings into the block that follows it.

    With ``source_lines`` a folded block's text is the source from its heading to its end;
    without, it is the heading texts and the content text joined by newlines.
    """
    stack: list[_Heading] = []
    pending: list[tuple[_Heading, tuple[str, ...]]] = []
    blocks: list[Block] = []

    def flush_pending() -> None:
        for heading, heading_path in pending:
            blocks.append(Block(heading.text, heading.start_line, heading.end_line, heading_path, "heading",
                                verbatim=source_lines is not None))
        pending.clear()

    for item in items:
        if isinstance(item, _Heading):
            if any(h.level >= item.level for h, _ in pending):
                flush_pending()
            while stack and stack[-1].level >= item.level:
                stack.pop()
            stack.append(item)
            pending.append((item, tuple(h.title for h in stack)))
            continue
        start = pending[0][0].start_line if pending else item.start_line
        if source_lines is not None:
            text = "\n".join(source_lines[start - 1 : item.end_line])
        else:
            text = "\n".join([*(h.text for h, _ in pending), item.text])
        blocks.append(Block(text, start, item.end_line, tuple(h.title for h in stack), item.kind,
                            verbatim=source_lines is not None))
        pending.clear()
    flush_pending()
    return blocks


# ---------------------------------------------------------------------------------------------
# Plain text


class TextParser:
    """Plain text: paragraphs separated by blank lines, each with its line span."""

    def parse(self, text: str, path: str) -> ParsedDocument:
        """Split ``text`` into paragraphs; the title is the first line of the first paragraph."""
        lines = split_lines(text)
        blocks: list[Block] = []
        start: int | None = None
        for number, line in enumerate([*lines, ""], start=1):
            if line.strip() and start is None:
                start = number
            elif not line.strip() and start is not None:
                blocks.append(Block("\n".join(lines[start - 1 : number - 1]), start, number - 1, verbatim=True))
                start = None
        title = _clip(blocks[0].text.splitlines()[0], MAX_TITLE_CHARS) if blocks else ""
        return ParsedDocument(title=title or _file_name(path), blocks=tuple(blocks))


# ---------------------------------------------------------------------------------------------
# Frontmatter


class _TooLarge(Exception):
    """Frontmatter nested too deeply or holding too many values to keep as metadata."""


@attrs.define
class _JsonConverter:
    """Turns parsed YAML/TOML values into JSON-ready ones, within a size budget."""

    max_nodes: int = 10_000
    max_depth: int = 32
    nodes: int = 0

    def convert(self, value: Any, depth: int = 0) -> Any:
        """A JSON-ready copy of ``value``; dates become ISO strings, other odd types strings."""
        self.nodes += 1
        if self.nodes > self.max_nodes or depth > self.max_depth:
            raise _TooLarge
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if value == value and abs(value) != float("inf") else str(value)
        if isinstance(value, (datetime.date, datetime.time)):
            return value.isoformat()
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, dict):
            return {self._key(k): self.convert(v, depth + 1) for k, v in value.items()}
        if isinstance(value, (set, frozenset)):
            return sorted((self.convert(v, depth + 1) for v in value), key=repr)
        if isinstance(value, (list, tuple)):
            return [self.convert(v, depth + 1) for v in value]
        return str(value)

    def _key(self, key: Any) -> str:
        return key if isinstance(key, str) else str(self.convert(key))


@attrs.frozen
class _Frontmatter:
    """What a document's frontmatter gave: metadata, how many leading lines it used, a warning."""

    metadata: dict[str, Any] = attrs.field(factory=dict)
    line_count: int = 0
    warning: str | None = None


_FRONTMATTER_KINDS = {"---": ("YAML", ("---", "..."), yaml.safe_load), "+++": ("TOML", ("+++",), tomllib.loads)}


def read_frontmatter(lines: Sequence[str]) -> _Frontmatter:
    """Read YAML (``---``) or TOML (``+++``) frontmatter from the first lines of a document.

    Frontmatter that is closed but invalid is skipped with a warning; frontmatter that is
    never closed is left to be parsed as ordinary text, with a warning.
    """
    opener = lines[0].lstrip("\ufeff").rstrip() if lines else ""
    if opener not in _FRONTMATTER_KINDS:
        return _Frontmatter()
    fmt, closers, load = _FRONTMATTER_KINDS[opener]
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in closers), None)
    if end is None:
        return _Frontmatter(warning=f"{fmt} frontmatter opened on line 1 is never closed; parsed as text")
    where = f"{fmt} frontmatter (lines 1-{end + 1})"
    try:
        data = load("\n".join(lines[1:end]))
    except Exception as exc:  # noqa: BLE001 - YAML/TOML errors, bad dates (ValueError), deep nesting (RecursionError)
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return _Frontmatter(line_count=end + 1, warning=f"invalid {where} skipped: {reason}")
    if data is None:
        return _Frontmatter(line_count=end + 1)
    if not isinstance(data, dict):
        return _Frontmatter(line_count=end + 1, warning=f"{where} is not a mapping; skipped")
    try:
        return _Frontmatter(_JsonConverter().convert(data), end + 1)
    except _TooLarge:
        return _Frontmatter(line_count=end + 1, warning=f"{where} is too large or too deeply nested; skipped")


def _frontmatter_title(metadata: dict[str, Any]) -> str:
    value = metadata.get("title")
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return _clip(str(value), MAX_TITLE_CHARS)
    return ""


# ---------------------------------------------------------------------------------------------
# Markdown

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
        first_h1 = next((i.title for i in items if isinstance(i, _Heading) and i.level == 1), "")
        title = _frontmatter_title(front.metadata) or first_h1 or _file_name(path)
        warnings = (front.warning,) if front.warning else ()
        return ParsedDocument(title, tuple(_assemble(items, body)), front.metadata, warnings)

    def _items(self, tokens: Sequence[MdToken], lines: Sequence[str]) -> Iterable[_Heading | _Content]:
        for index, token in enumerate(tokens):
            if token.level != 0 or token.map is None or token.nesting == -1:
                continue
            start, end = _trim_blank(lines, token.map[0] + 1, min(token.map[1], len(lines)))
            if start > end:
                continue
            source = "\n".join(lines[start - 1 : end])
            if token.type == "heading_open":
                title = _clip(self._plain(tokens[index + 1].content), MAX_HEADING_CHARS)
                if title:
                    yield _Heading(int(token.tag[1:]), title, source, start, end)
            elif token.type in _MD_KINDS:
                yield _Content(_MD_KINDS[token.type], source, start, end)

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


# ---------------------------------------------------------------------------------------------
# HTML

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

    def add(self, text: str, first_line: int, last_line: int) -> None:
        """Append text found on lines ``first_line..last_line``; the span follows the visible text."""
        if text.strip():
            self.start_line = self.start_line if self.seen_text else first_line
            self.last_line = max(self.last_line, last_line)
            self.seen_text = True
        if self.preformatted:
            self.lines[-1].append(text)
            return
        text = _SPACES.sub(" ", text)
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
        return "\n".join(_indent(line) + _SPACES.sub(" ", line.strip()) for line in joined if line.strip())


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
        self.items: list[_Heading | _Content] = []
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
            self._structure_inside(tag)
        elif tag == "br" and self._loose is not None:
            self._loose.newline()
        elif tag in _BLOCK_TAGS:
            self._flush_loose()
        if self._capture is None and (tag in _LEAF_KINDS or tag in _CONTAINER_KINDS):
            kind = _LEAF_KINDS.get(tag) or _CONTAINER_KINDS[tag]
            outer_lists = self._open.count("ul", "ol") - (tag in ("ul", "ol"))
            self._capture = _Capture(tag, kind, len(self._open) - 1, line, line, tag == "pre", outer_lists)

    def handle_endtag(self, tag: str) -> None:
        index = self._open.last_index(tag)
        if index is None:
            return
        self._close_elements(index)
        if self._capture is not None and tag in _BLOCK_TAGS and tag not in ("td", "th"):
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
            self.title = _clip("".join(self._title_parts), MAX_TITLE_CHARS)

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

    def _structure_inside(self, tag: str) -> None:
        """Line breaks, list bullets and cell separators inside the block being collected."""
        assert self._capture is not None
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
            self.title = self.title or _clip("".join(self._title_parts), MAX_TITLE_CHARS)
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
        """Record a finished block; its span runs from its first to its last line of text."""
        text = capture.text()
        if not text:
            return
        if capture.kind == "heading":
            title = _clip(text, MAX_HEADING_CHARS)
            self.items.append(_Heading(int(capture.tag[1]), title, title, capture.start_line, capture.last_line))
        else:
            self.items.append(_Content(capture.kind, text, capture.start_line, capture.last_line))


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
        source = _defuse(_NEWLINE.sub("\n", text).removeprefix("\ufeff"))
        try:
            collector.feed(source)
            collector.close()
        except Exception as exc:  # noqa: BLE001 - html.parser asserts on some malformed declarations
            warnings.append(f"HTML parsing stopped early: {exc}")
        first_h1 = next((i.title for i in collector.items if isinstance(i, _Heading) and i.level == 1), "")
        title = collector.title or first_h1 or _file_name(path)
        blocks = tuple(_assemble(collector.items))
        return ParsedDocument(title, blocks, collector.metadata, tuple(warnings))


@hookimpl
def register_parsers(register: Any) -> None:
    """Plain text, Markdown and HTML."""
    register("text", lambda config: TextParser(), extensions=(".txt", ".text", ".rst", ".log"))
    register("markdown", lambda config: MarkdownParser(), extensions=(".md", ".markdown", ".mdx"))
    register("html", lambda config: HtmlParser(), extensions=(".html", ".htm", ".xhtml"))
