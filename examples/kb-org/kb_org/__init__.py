"""kb-org: Emacs Org-mode files for kb, an example of a third-party parser plugin.

Headlines (``* Top``, ``** Below``) become the heading path of the paragraphs under them;
``#+TITLE:`` names the document; other ``#+KEYWORD:`` lines are left out. Paragraphs are
verbatim, so a citation ``notes/plan.org#L4-L6`` shows exactly those lines.
"""

from __future__ import annotations

import re

from kb_core.plugin import Block, FactoryContext, ParsedDocument, RegisterParser, hookimpl

_HEADLINE = re.compile(r"^(\*+)\s+(.*?)\s*$")
_KEYWORD = re.compile(r"^#\+(\w+):\s*(.*)$")
_LINE_END = re.compile(r"\r\n|\r|\n")


class OrgParser:
    """Parse Org-mode text into blocks with heading paths and exact line spans."""

    def parse(self, text: str, path: str) -> ParsedDocument:
        """Split ``text`` into paragraphs under their headlines; never raises."""
        lines = _LINE_END.split(text)
        if lines and lines[-1] == "":
            lines.pop()
        title = ""
        headings: list[tuple[int, str]] = []  # (level, headline) of the open headlines
        blocks: list[Block] = []
        start: int | None = None

        def close(end: int) -> None:
            nonlocal start
            if start is not None:
                body = "\n".join(lines[start - 1 : end])
                blocks.append(Block(body, start, end, tuple(h for _, h in headings), verbatim=True))
            start = None

        for number, line in enumerate(lines, start=1):
            headline, keyword = _HEADLINE.match(line), _KEYWORD.match(line)
            if headline or keyword or not line.strip():
                close(number - 1)
            if headline and headline.group(2):
                level = len(headline.group(1))
                headings = [(lvl, h) for lvl, h in headings if lvl < level] + [(level, headline.group(2))]
            elif keyword:
                title = keyword.group(2).strip() if keyword.group(1).upper() == "TITLE" and not title else title
            elif line.strip() and start is None:
                start = number
        close(len(lines))
        return ParsedDocument(title=title or path.rsplit("/", 1)[-1], blocks=tuple(blocks))


@hookimpl
def register_parsers(register: RegisterParser) -> None:
    """Register the ``org`` parser for ``.org`` files."""

    def make(_ctx: FactoryContext) -> OrgParser:
        return OrgParser()

    register("org", make, extensions=(".org",), description="Emacs Org-mode", licence="Apache-2.0")
