"""Built-in document parsers: plain text, Markdown (with YAML/TOML frontmatter), HTML, and CSV/TSV.

Every parser turns decoded text into a :class:`~kb_core.types.ParsedDocument` and never raises.
Line numbers are 1-based and count the lines of the original text as :func:`split_lines` does
(``\\r\\n``, ``\\r`` and ``\\n`` end a line, nothing else), so ``path#L12-L34`` points at the
same lines an editor shows.

A heading is folded into the block that follows it (the block's span and text start at the
heading line), so a chunk never cites a passage without the heading that introduces it; a
heading with no content of its own before the next heading of the same or a higher level
becomes a block of kind ``"heading"``.

A table is a block of kind ``"table"``, one row per line and its header row first: Markdown keeps
its source lines (the delimiter row ``|---|`` included), HTML and CSV give ``cell | cell`` lines,
each with the source lines of its row (``Block.line_spans``). The headings before a table are not
folded into it but stay blocks of their own, which the chunker keeps with the table; a chunk that
holds a later part of a long table repeats its header row.
"""

from __future__ import annotations

from kb_core.builtin.parsers.blocks import split_lines
from kb_core.builtin.parsers.delimited import CsvParser
from kb_core.builtin.parsers.frontmatter import read_frontmatter
from kb_core.builtin.parsers.html import HtmlParser
from kb_core.builtin.parsers.markdown import MarkdownParser
from kb_core.builtin.parsers.text import TextParser
from kb_core.extend.hookspecs import RegisterParser, hookimpl

__all__ = [
    "CsvParser",
    "HtmlParser",
    "MarkdownParser",
    "TextParser",
    "TEXT_PARSERS",
    "read_frontmatter",
    "register_parsers",
    "split_lines",
]


#: The core's parsers of text files: a document they parsed is its file's own text, line for line.
TEXT_PARSERS = frozenset({"text", "markdown", "html", "csv"})


@hookimpl
def register_parsers(register: RegisterParser) -> None:
    """Plain text, Markdown, HTML, and CSV/TSV."""
    register("text", lambda config: TextParser(), extensions=(".txt", ".text", ".rst", ".log"))
    register("markdown", lambda config: MarkdownParser(), extensions=(".md", ".markdown", ".mdx"))
    register("html", lambda config: HtmlParser(), extensions=(".html", ".htm", ".xhtml"))
    register("csv", lambda config: CsvParser(), extensions=(".csv", ".tsv"), description="CSV and TSV tables")
