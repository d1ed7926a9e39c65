"""Quoted replies left out of a message's text, so that a thread's words are indexed once.

A reply quotes the message it answers; that message is a document of its own when it is in the mailbox,
and a quote of it would be found (and cited) twice. So kb drops quoted text always: ``>`` lines, the
"On … wrote:" line that opens them, an Outlook reply's "-----Original Message-----" (or "From: … Sent:")
and everything after it, and in HTML mail ``<blockquote>`` elements.
"""

from __future__ import annotations

import re

#: The line that opens a quote, in the languages mail clients write it in ("On … wrote:", "Am … schrieb",
#: "Le … a écrit :", "… 작성:", "… 写道：").
_ATTRIBUTION = re.compile(
    r"(wrote|writes|schrieb|a écrit|escribió|ha scritto|schreef|написал|작성|写道|書きました)\s*[:：]?\s*$",
    re.IGNORECASE,
)
_ORIGINAL = re.compile(r"^\s*-{2,}\s*(Original Message|Ursprüngliche Nachricht|Message d'origine)\s*-{2,}", re.I)
_OUTLOOK_FROM = re.compile(r"^\s*\**(From|Von|De)\s*:\**\s", re.IGNORECASE)
_OUTLOOK_SENT = re.compile(r"^\s*\**(Sent|Gesendet|Envoyé|Date)\s*:\**\s", re.IGNORECASE)
_OPENS = re.compile(r"\s*(On|Am|Le|El|Il|Op)\b")  # the first words of an attribution split over two lines
_BLOCKQUOTE = re.compile(r"<(/?)blockquote\b[^>]*>", re.IGNORECASE)
#: The most characters an attribution line spans, joined over two lines ("On …, Alice <\na@x> wrote:").
_ATTRIBUTION_CHARS = 400


def _is_quote(line: str) -> bool:
    return line.lstrip().startswith(">")


def _cut_outlook(lines: list[str]) -> list[str]:
    """The lines before an Outlook-style quoted original (all of them when there is none)."""
    for index, line in enumerate(lines):
        if _ORIGINAL.match(line):
            return lines[:index]
        sent = index and any(_OUTLOOK_SENT.match(n) for n in lines[index + 1 : index + 4])
        if sent and _OUTLOOK_FROM.match(line) and set(lines[index - 1].strip()) <= set("-_"):
            return lines[:index]
    return lines


def drop_quotes(text: str) -> str:
    """``text`` (lines separated by ``\\n``) without quoted replies; blank runs left behind are one blank line."""
    lines = _cut_outlook(text.split("\n"))
    keep = [not _is_quote(line) for line in lines]
    for index, line in enumerate(lines):
        if not keep[index] or not _ATTRIBUTION.search(line) or len(line) > _ATTRIBUTION_CHARS:
            continue
        following = next((n for n in range(index + 1, len(lines)) if lines[n].strip()), None)
        if following is None or not _is_quote(lines[following]):
            continue
        keep[index] = False
        previous = lines[index - 1] if index else ""
        if len(previous) + len(line) <= _ATTRIBUTION_CHARS and _OPENS.match(previous) and not _OPENS.match(line):
            keep[index - 1] = False
    out: list[str] = []
    for line, kept in zip(lines, keep):
        if kept and not (not line.strip() and out and not out[-1].strip()):
            out.append(line)
    return "\n".join(out).strip("\n")


def drop_html_quotes(html: str) -> str:
    """``html`` without its ``<blockquote>`` elements (nested ones counted; an unclosed one runs to the end)."""
    out: list[str] = []
    depth = 0
    position = 0
    for tag in _BLOCKQUOTE.finditer(html):
        if depth == 0:
            out.append(html[position : tag.start()])
        depth = depth - 1 if tag.group(1) else depth + 1
        depth = max(depth, 0)
        position = tag.end()
    if depth == 0:
        out.append(html[position:])
    return "".join(out)


def drop_trailing_attribution(text: str) -> str:
    """``text`` without a last line that opened a quote now gone ("On … wrote:" before a removed blockquote)."""
    lines = text.rstrip("\n").split("\n")
    if lines and len(lines[-1]) <= _ATTRIBUTION_CHARS and _ATTRIBUTION.search(lines[-1]):
        lines.pop()
    return "\n".join(lines).rstrip()
