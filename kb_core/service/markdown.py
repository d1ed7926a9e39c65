"""An answer in Markdown: its text with every ``[#n]`` a link to the cited lines, then its sources; or the refusal.

A grounded answer is its text with every marker as the reference link ``[[n]][kb-n]``, then (a computed
answer) the computation kb worked out with each operand's passage and line, then the
sources (each citation's place, a link), kb's notes, then the links' definitions (``[kb-n]:
BASE/#/doc/PATH/L3-L9``: the cited lines on ``kb serve``'s page). Reference links, because a
marker's passage is known only once the answer is done: a stream writes ``[[n]][kb-n]`` as the
marker arrives, and the definitions at its end make every marker a link. The model's text is
untrusted (it copies from notes): it is written inert (:mod:`kb_core.service.inert`), so the only
links in a message are kb's own, and no image or HTML; so are kb's notes and own text, which name paths.

A refusal is kb's own text when it refused before asking the model (no passage, or none above the
score gate, with the nearest ones listed), then the refusal line with its reason and note
(:func:`kb_core.service.words.refusal_line`), then the nearest passages (or, for an answer the
answer check withdrew, those it cited) as links. A model's answer kb refused is never repeated.
The words are :mod:`kb_core.service.words`'.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from kb_core.answers.citations import MARKER_PATTERN
from kb_core.service import words
from kb_core.service.inert import Inert, inert
from kb_core.types import Moment

#: A link definition this module writes (for :func:`fingerprint`, which leaves out the host it names).
_DEFINITION = re.compile(r"^\[kb-c?[0-9]+\]: \S+$", re.MULTILINE)
_MARKDOWN = re.compile(r"([\\`*_\[\]<>])")
#: Between text a stream sent and the message kb's checks made of it.
RULE = "\n\n---\n\n"

Answer = Mapping[str, Any]


def page_link(base: str, citation: Mapping[str, Any]) -> str:
    """The address of ``citation``'s lines on kb's page (its ``#/doc/PATH/Lstart-Lend`` route) under ``base``."""
    return f"{base}/#/doc/{quote(citation['path'], safe='')}/L{citation['start_line']}-L{citation['end_line']}"


def linked(text: str) -> str:
    """``text`` with every ``[#n]`` as the reference link ``[[n]][kb-n]`` (nothing else changed)."""
    return MARKER_PATTERN.sub(lambda m: f"[[{m[1]}]][kb-{m[1]}]", text)


def shown(text: str) -> str:
    """A model's ``text`` as kb writes it in Markdown: inert (no link, image or HTML of its own; code as it is),
    every ``[#n]`` outside code the reference link ``[[n]][kb-n]`` (:mod:`kb_core.service.inert`)."""
    return inert(text)


def _note(note: str) -> str:
    """A note (it may quote a model's computation or a path) inert, on a line kb started."""
    return inert(note, link_markers=False, line_start=False)


def escaped(text: str) -> str:
    """``text`` with Markdown's special characters escaped."""
    return _MARKDOWN.sub(r"\\\1", text)


def place(source: Mapping[str, Any]) -> str:
    """A cited passage as people read it, Markdown-escaped: ``notes/a.md, lines 3–9`` (and its scan page, or
    its moment in a recording: ``talk.mp3, lines 2–3, talk.mp3#t=00:00:06,00:00:13``)."""
    cited = source["citation"]
    shown = words.place(escaped(cited["path"]), cited["start_line"], cited["end_line"])
    region = source.get("region")
    if region:
        low = ", low" if region["low"] else ""
        shown += f", page {region['page']} (OCR confidence {region['confidence']:.2f}{low})"
    moment = source.get("moment")
    if moment:  # a recording: when it is said, in the form a player's link takes
        end = moment.get("end")
        shown += f", {escaped(cited['path'])}#{Moment(moment['start'], end).fragment()}"
    return shown


def _label(source: Mapping[str, Any], index: int) -> str:
    return f"kb-{source['marker']}" if source.get("marker") is not None else f"kb-c{index}"


def _definitions(sources: list[Mapping[str, Any]], base: str) -> str:
    lines = [f"[{_label(s, i)}]: {page_link(base, s['citation'])}" for i, s in enumerate(sources, 1)]
    return "\n".join(dict.fromkeys(lines))  # a marker cited twice is defined once


def _notes(answer: Answer) -> list[str]:
    """kb's notes under an answer: passages holding instructions, which kb ignored."""
    note = words.ignored_note([f"passage [{m}]" for m in answer.get("ignored_instructions") or []])
    return [note] if note else []


def message(answer: Answer, base: str) -> str:
    """``answer`` (answer.v1) in Markdown, its links under ``base`` (``http://host:port``; "" for none)."""
    if answer["grounded"]:
        return shown(answer["answer"]) + sources_part(answer, base)
    return refusal(answer, base)


def computation_part(answer: Answer) -> str:
    """A computed answer's working: the computation kb evaluated and where each operand is ('' for other answers)."""
    computation = answer.get("computation")
    if not computation:
        return ""
    working = f"`{computation['working'].replace('`', '')}`"
    lines = [words.say("worked_out", working=working, result=escaped(computation["result"]))]
    for operand in computation["operands"]:
        marker = f"[[{operand['marker']}]][kb-{operand['marker']}]"
        lines.append(f"- `{operand['literal'].replace('`', '')}`: {words.operand_place(operand, marker)}")
    stated = computation.get("stated")
    if stated:
        number, marker = f"`{stated['literal'].replace('`', '')}`", f"[[{stated['marker']}]][kb-{stated['marker']}]"
        lines.append(words.say("stated_as", number=number, marker=marker, line=stated["line"]))
    return "\n".join(lines)


def sources_part(answer: Answer, base: str) -> str:
    """What follows a grounded answer's text: its working (a computed one), the sources list, kb's notes, the
    links' definitions."""
    citations = answer["citations"]
    listed = [f"- [{c['marker']}] [{place(c)}][{_label(c, i)}]" for i, c in enumerate(citations, 1)]
    note = [f"Note: {_note(answer['note'])}"] if answer.get("note") else []
    parts = [computation_part(answer), words.say("sources"), "\n".join(listed), *note, *_notes(answer)]
    parts.append(_definitions(citations, base))
    return "\n\n" + "\n\n".join(p for p in parts if p)


def refusal(answer: Answer, base: str) -> str:
    """A refusal in words: why (and kb's own text, when it refused before the model), then the nearest passages."""
    own = words.own_text(answer)  # kb's words, naming paths
    parts = [inert(own, link_markers=False)] if own else []
    parts.append(words.refusal_line({**answer, "note": _note(answer["note"])} if answer.get("note") else answer))
    candidates = answer.get("candidates") or []
    listed = words.lists_candidates(answer)
    if listed:
        shown = [f"- [{place(c)}][{_label(c, i)}] (score {c['score']:.2f})" for i, c in enumerate(candidates, 1)]
        parts += [words.candidates_heading(answer), "\n".join(shown)]
    parts += _notes(answer)
    if listed:
        parts.append(_definitions(candidates, base))
    return "\n\n".join(parts)


def is_reply(content: str, answer: Answer) -> bool:
    """Whether ``content`` is what kb replied with ``answer``: its message, whole or after streamed text and
    the rule (blanks and the host of the links aside)."""
    said, whole = fingerprint(content), message(answer, "")
    after_rule = (fingerprint(RULE + whole), fingerprint(RULE + words.say("as_checked") + "\n\n" + whole))
    return said == fingerprint(whole) or said.endswith(after_rule)


def fingerprint(content: str) -> str:
    """A message as kb wrote it, to compare: no link definitions (they name the host), blanks as one space."""
    return " ".join(_DEFINITION.sub("", content).split())


class LinkedStream:
    """Checked text as a Markdown message's deltas, as :func:`shown` writes the whole text: markers linked as they
    come; what is still undecided (a partial marker, a backtick run, a line that may open a fence: see
    :class:`kb_core.service.inert.Inert`) and blanks at either end held back; then, from the finished answer, the
    rest of the message."""

    def __init__(self) -> None:
        self.streamed: list[str] = []  # the text received
        self.sent: list[str] = []  # what went out
        self._text = Inert()
        self._begun = False  # a non-blank went to self._text
        self._blanks = ""  # blanks the text so far ends with
        self._sent_blanks = ""  # blanks the output so far ends with

    def feed(self, text: str) -> str:
        """The delta to send for the next piece of ``text`` (may be empty)."""
        self.streamed.append(text)
        pending = self._blanks + text
        if not self._begun:
            pending = pending.lstrip()
        ready = len(pending.rstrip())
        self._begun = self._begun or ready > 0
        self._blanks = pending[ready:]
        out = self._sent_blanks + self._text.feed(pending[:ready])
        ready = len(out.rstrip())  # a blank before a held piece waits for it
        out, self._sent_blanks = out[:ready], out[ready:]
        if out:
            self.sent.append(out)
        return out

    def rest(self, answer: Answer, base: str) -> str:
        """The content still to send once ``answer`` (answer.v1) is done: the sent deltas plus it make the message."""
        tail = self._sent_blanks + self._text.end()  # what was undecided until the end; a fence left open closed
        self._blanks = self._sent_blanks = ""
        if tail:
            self.sent.append(tail)
        whole = message(answer, base)
        if not self.sent:
            return whole
        if answer["grounded"] and "".join(self.streamed).strip() == answer["answer"]:
            return tail + sources_part(answer, base)
        checked = words.say("as_checked") + "\n\n" if answer["grounded"] else ""
        return tail + RULE + checked + whole
