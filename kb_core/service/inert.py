"""A model's text made inert for Markdown: nothing in it becomes a link, an image or HTML when a client renders it.

The model copies from notes, and notes are untrusted: a note can ask for ``<script>``, for a link to
``javascript:`` or for an image that makes the reader's client fetch ``https://attacker/?q=secret``.
:class:`Inert` rewrites the text, outside code, so that CommonMark and GFM renderers show it as text:

* ``<`` is ``&lt;``: no raw HTML and no autolink ``<scheme:...>`` can start. An entity, not ``\\<``:
  every Markdown renderer passes an entity through as text, while the backslash escape of ``<`` is
  CommonMark's only (Markdown.pl and Python-Markdown print the backslash and keep the tag live);
* ``[`` and ``]`` are ``\\[`` and ``\\]`` (and ``!`` before ``[`` is ``\\!``): no inline or reference link,
  no image, no line defining a reference; kb's markers ``[#n]`` become kb's own links ``[[n]][kb-n]``
  (a ``(`` right after one is ``\\(``); a backslash escape the text wrote stays one (``\\<`` is ``&lt;``);
* a run of three or more ``~`` is ``\\~~~`` and a backtick run that is no code span on its line is
  escaped, so a renderer opens a code block only where this module saw one (a fence it cannot see,
  after a list marker or ``>``, would otherwise swap code and text).

Code is left as written: a code span (a backtick run closed by one as long on the same line, no
``|`` inside, which a GFM table would split), and a fenced block opened by a line of ``` or ``~~~``
indented at most three spaces. A fence closes at its closing line (written back at the opening
line's indent, so that the renderer closes it too), before the first line indented less than the
opening one (a list item it sat in has ended: kb writes the closing line), and at the end of the
text. A blank line goes before an opening fence, for renderers where a fence cannot interrupt a
paragraph. Emphasis, lists, headings and tables stay. A bare ``https://...`` stays text that a
GFM renderer with its autolink extension shows as a link: visible, followed only on a click.

:meth:`Inert.feed` takes the text in pieces and returns what is decided, holding back the rest (a
backtick run, ``\\``, ``!``, a partial marker, a line that may open or close a fence), so that the
pieces' output is the whole text's whatever the cuts (:func:`inert`).
"""

from __future__ import annotations

import re
import string

from kb_core.answers.citations import MARKER_PATTERN

__all__ = ["Inert", "inert"]

_PUNCTUATION = frozenset(string.punctuation)
_PARTIAL_MARKER = re.compile(r"\[(?:#[0-9]{0,3})?")
_PLAIN = re.compile(r"[^\\<\[\]!`~\r\n(]+")
_RUN = {"`": re.compile(r"`+"), "~": re.compile(r"~+")}
_LINE_END = re.compile(r"[\r\n]")
_MAY_OPEN = re.compile(r" {0,3}(`*|~*)")
_OPENER = re.compile(r" {0,3}(`{3,}|~{3,})(.*)", re.DOTALL)
_INDENT = re.compile(r"[ \t]*")


def _columns(indent: str) -> int:
    """The column ``indent`` (spaces and tabs, a tab to the next multiple of 4) ends at."""
    column = 0
    for char in indent:
        column = column + 4 - column % 4 if char == "\t" else column + 1
    return column


class Inert:
    """Text made inert piece by piece (see the module): :meth:`feed` each piece, then :meth:`end`."""

    def __init__(self, *, link_markers: bool = True, line_start: bool = True) -> None:
        self.link_markers = link_markers  # False: a marker is text like any other (kb's own words)
        self._fence: tuple[int, str] | None = None  # an open fence: its indent and its opening run
        self._line_start = line_start  # False: the text goes on a line kb started
        self._line_blank = True
        self._after_blank = True  # the line before was blank (or there was none)
        self._after_marker = False
        self._held = ""

    def feed(self, text: str, *, final: bool = False) -> str:
        """The output decided once ``text`` follows what was fed (``final``: nothing follows)."""
        pending, out, at = self._held + text, [], 0
        while at < len(pending):
            step = self._step(pending, at, final)
            if step is None:
                break
            made, at = step
            out.append(made)
        self._held = pending[at:]
        return "".join(out)

    def end(self) -> str:
        """The output of what is held, as the end of the text (an open fence closed)."""
        out = self.feed("", final=True)
        if self._fence is not None:
            indent, run = self._fence
            out += ("" if self._line_start else "\n") + " " * indent + run
            self._fence, self._line_start = None, True
        return out

    def _step(self, text: str, at: int, final: bool) -> tuple[str, int] | None:
        """The output of the unit at ``at`` and where the next starts; None while it is undecided."""
        char = text[at]
        if char in "\r\n":
            if char == "\r" and at + 1 == len(text) and not final:
                return None  # "\r\n" is one line end
            end = at + (2 if text.startswith("\r\n", at) else 1)
            self._after_blank, self._line_blank, self._line_start = self._line_blank, True, True
            self._after_marker = False
            return text[at:end], end
        if self._line_start:
            return self._fenced_line(text, at, final) if self._fence else self._opening(text, at, final)
        if self._fence:
            found = _LINE_END.search(text, at)
            end = found.start() if found else len(text)
            return text[at:end], end
        step = self._inline(text, at, final)
        if step is not None:
            self._line_blank = self._line_blank and not text[at : step[1]].strip(" \t")
            self._after_marker = step[0].startswith("[[")  # kb's link (the text's "[" is "\[")
        return step

    def _line(self, text: str, at: int, final: bool) -> tuple[str, bool]:
        """The line from ``at`` (without its end) and whether it is whole."""
        found = _LINE_END.search(text, at)
        return (text[at : found.start()], True) if found else (text[at:], final)

    def _opening(self, text: str, at: int, final: bool) -> tuple[str, int] | None:
        """A line of text starting: a fence opening it (written whole), or nothing consumed (its text follows)."""
        line, whole = self._line(text, at, final)
        opener = _OPENER.fullmatch(line)
        if not whole:
            if _MAY_OPEN.fullmatch(line) or (opener and (opener[1][0] == "~" or "`" not in opener[2])):
                return None
        elif opener and (opener[1][0] == "~" or "`" not in opener[2]):
            self._fence = (len(line) - len(line.lstrip(" ")), opener[1])
            before = "" if self._after_blank else "\n"
            self._line_start = self._line_blank = False
            return before + line, at + len(line)
        self._line_start = False
        return "", at

    def _fenced_line(self, text: str, at: int, final: bool) -> tuple[str, int] | None:
        """A line inside a fence: blank, its closing line, a line before which it closes, or code."""
        assert self._fence is not None
        indent, run = self._fence
        line, whole = self._line(text, at, final)
        spaces = _INDENT.match(line)
        lead = spaces[0] if spaces else ""
        if lead == line:
            if not whole:
                return None
            self._line_start = False
            return line, at + len(line)
        columns = _columns(lead)
        if columns < indent:  # the list item the fence was in has ended: close it before this line
            self._fence, self._after_blank, self._line_blank = None, False, True
            return " " * indent + run + "\n", at
        body = line[len(lead) :]
        closing = columns <= indent + 3 and re.fullmatch(re.escape(run[0]) + r"+[ \t]*", body)
        if closing and not whole:
            return None
        self._line_start = False
        if closing and len(body.rstrip(" \t")) >= len(run):
            self._fence, self._line_blank = None, False
            return " " * indent + run, at + len(line)
        return "", at

    def _inline(self, text: str, at: int, final: bool) -> tuple[str, int] | None:
        """One unit of a line's text outside code: a character escaped, a marker, a code span or plain text."""
        char, following = text[at], text[at + 1 : at + 2]
        if char == "\\":
            if not following:
                return ("\\", at + 1) if final else None
            if following == "<":
                return "&lt;", at + 2
            return (text[at : at + 2], at + 2) if following in _PUNCTUATION else ("\\", at + 1)
        if char == "<":
            return "&lt;", at + 1
        if char == "[":
            marker = MARKER_PATTERN.match(text, at) if self.link_markers else None
            if marker:
                return f"[[{marker[1]}]][kb-{marker[1]}]", marker.end()
            partial = _PARTIAL_MARKER.match(text, at)
            if self.link_markers and not final and partial and partial.end() == len(text):
                return None
            return "\\[", at + 1
        if char == "]":
            return "\\]", at + 1
        if char == "!":
            if not following:
                return ("!", at + 1) if final else None
            return ("\\!" if following == "[" else "!"), at + 1
        if char == "(":
            return ("\\(" if self._after_marker else "("), at + 1
        if char in "`~":
            return self._run(text, at, final)
        plain = _PLAIN.match(text, at)
        assert plain is not None
        return plain[0], plain.end()

    def _run(self, text: str, at: int, final: bool) -> tuple[str, int] | None:
        """A run of backticks (a code span to its closing run on the line, else escaped) or of tildes."""
        run = _RUN[text[at]].match(text, at)
        assert run is not None
        if run.end() == len(text) and not final:
            return None
        if run[0][0] == "~":
            return ("\\" + run[0] if len(run[0]) >= 3 else run[0]), run.end()
        line_end = _LINE_END.search(text, run.end())
        stop = line_end.start() if line_end else len(text)
        for closing in _RUN["`"].finditer(text, run.end(), stop):
            if closing.end() == len(text) and not final:
                return None  # the run may go on
            if len(closing[0]) == len(run[0]):
                if "|" in text[run.end() : closing.start()]:
                    break
                return text[at : closing.end()], closing.end()
        else:
            if not line_end and not final:
                return None
        return "\\`" * len(run[0]), run.end()


def inert(text: str, *, link_markers: bool = True, line_start: bool = True) -> str:
    """``text`` made inert for Markdown, whole (``link_markers``: every ``[#n]`` as kb's link ``[[n]][kb-n]``;
    ``line_start``: False for text that goes on a line kb started, as a note after ``Note:``)."""
    made = Inert(link_markers=link_markers, line_start=line_start)
    return made.feed(text, final=True) + made.end()
