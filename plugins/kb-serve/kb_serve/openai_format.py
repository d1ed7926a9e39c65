"""kb's answer as an OpenAI chat completion: ``answer.v1`` -> the assistant's message, its stream of chunks, usage.

**The message** is the answer as Markdown. A grounded answer is its text with every ``[#n]`` marker
turned into a link, ``[[n]][kb-n]``, then a "Sources" list (each citation's path and lines, a link),
then the links' definitions (``[kb-n]: http://HOST/#/doc/PATH/L3-L9``: the cited lines on kb's own
page). The links are reference links because a marker's passage is known only once the answer is
done: a stream writes ``[[n]][kb-n]`` as the marker arrives, and the definitions at its end make
every marker a link (a Markdown renderer shows them once they arrive; a terminal shows the URLs).

A refusal says what ``kb ask`` prints: kb's own words when it refused before asking the model (no
passage, or none above the score gate, with the nearest ones listed), then ``kb refused to answer
(reason): note``, then the nearest passages (or, for an answer withdrawn by the answer check, those
it cited) as links. A model's answer kb refused is not repeated as if it were one.

**A stream** (:class:`LinkedStream`) sends the model's text as it comes, markers rewritten, holding
back only an incomplete ``[#...`` and blanks at either end. If the answer stands (kb's checked text is
what was streamed), the rest of the message follows and the deltas make exactly the message of the
whole reply. If kb's checks changed it (a refusal, or a repaired or shortened answer), the message
follows as a last paragraph after a rule (``---``), so the content ends with what the whole reply
would say. :func:`fingerprint` reads a message back as kb wrote it (for recognising a conversation).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

#: kb's citation marker (kb_core's ``MARKER_PATTERN``), and the start of one a stream may still complete.
MARKER = re.compile(r"\[#([0-9]{1,3})\]")
_PARTIAL_MARKER = re.compile(r"\[(?:#[0-9]{0,3})?\Z")
#: A link definition this module writes (for :func:`fingerprint`, which leaves out the host it names).
_DEFINITION = re.compile(r"^\[kb-c?[0-9]+\]: \S+$", re.MULTILINE)
_MARKDOWN = re.compile(r"([\\`*_\[\]<>])")
#: Between what a stream sent and the message kb's checks made of it.
RULE = "\n\n---\n\n"
AS_CHECKED = "As checked by kb:\n\n"
#: Refusals that are kb's own words (no model was asked); their text says why and lists the nearest passages.
KB_WORDS = ("no_chunks", "score_gate")
WITHDRAWN = "not_answered"


def page_link(base: str, citation: dict[str, Any]) -> str:
    """The address of ``citation``'s lines on kb's page (its ``#/doc/PATH/Lstart-Lend`` route) under ``base``."""
    return f"{base}/#/doc/{quote(citation['path'], safe='')}/L{citation['start_line']}-L{citation['end_line']}"


def linked(text: str) -> str:
    """``text`` with every ``[#n]`` as the reference link ``[[n]][kb-n]``."""
    return MARKER.sub(lambda m: f"[[{m[1]}]][kb-{m[1]}]", text)


def _escaped(text: str) -> str:
    return _MARKDOWN.sub(r"\\\1", text)


def place(source: dict[str, Any]) -> str:
    """A cited passage as people read it, Markdown-escaped: ``notes/a.md, lines 3–9`` (and its scan page)."""
    cited = source["citation"]
    start, end = cited["start_line"], cited["end_line"]
    lines = f"line {start}" if start == end else f"lines {start}–{end}"
    shown = f"{_escaped(cited['path'])}, {lines}"
    region = source.get("region")
    if region:
        low = ", low" if region["low"] else ""
        shown += f", page {region['page']} (OCR confidence {region['confidence']:.2f}{low})"
    return shown


def _label(source: dict[str, Any], index: int) -> str:
    return f"kb-{source['marker']}" if source.get("marker") is not None else f"kb-c{index}"


def _definitions(sources: list[dict[str, Any]], base: str) -> str:
    lines = [f"[{_label(s, i)}]: {page_link(base, s['citation'])}" for i, s in enumerate(sources, 1)]
    return "\n".join(dict.fromkeys(lines))  # a marker cited twice is defined once


def _notes(answer: dict[str, Any]) -> list[str]:
    """The notes ``kb ask`` prints under an answer: instructions found in a passage (ignored)."""
    ignored = answer.get("ignored_instructions") or []
    if not ignored:
        return []
    markers = ", ".join(f"[{m}]" for m in ignored)
    return [
        f"Note: passage {markers} contains instructions addressed to the assistant; kb treated them as data"
        " and ignored them."
    ]


def message(answer: dict[str, Any], base: str) -> str:
    """The assistant's message for ``answer`` (answer.v1), its links under ``base`` (``http://host:port``)."""
    if answer["grounded"]:
        return linked(answer["answer"]) + sources_part(answer, base)
    return refusal(answer, base)


def sources_part(answer: dict[str, Any], base: str) -> str:
    """What follows a grounded answer's text: the Sources list, kb's notes, the links' definitions."""
    citations = answer["citations"]
    listed = [f"- [{c['marker']}] [{place(c)}][{_label(c, i)}]" for i, c in enumerate(citations, 1)]
    note = [f"Note: {answer['note']}"] if answer.get("note") else []
    parts = ["Sources:", "\n".join(listed), *note, *_notes(answer), _definitions(citations, base)]
    return "\n\n" + "\n\n".join(p for p in parts if p)


def refusal(answer: dict[str, Any], base: str) -> str:
    """A refusal in words: why (and kb's own text, when it refused before the model), then the nearest passages."""
    reason = answer.get("refusal_reason") or "refused"
    parts = [answer["answer"].strip()] if reason in KB_WORDS and answer["answer"].strip() else []
    why = f"kb refused to answer ({reason})"
    parts.append(f"{why}: {answer['note']}" if answer.get("note") else f"{why}.")
    candidates = answer.get("candidates") or []
    if candidates and reason != "score_gate":  # (the gate's own text lists them, as kb ask prints it)
        heading = "It cited:" if answer.get("refusal_detail") == WITHDRAWN else "Nearest candidates:"
        listed = [f"- [{place(c)}][{_label(c, i)}] (score {c['score']:.2f})" for i, c in enumerate(candidates, 1)]
        parts += [heading, "\n".join(listed)]
    parts += _notes(answer)
    if candidates and reason != "score_gate":
        parts.append(_definitions(candidates, base))
    return "\n\n".join(parts)


def is_reply(content: str, answer: dict[str, Any]) -> bool:
    """Whether ``content`` is what kb replied with ``answer``: its message, whole or after a streamed text and
    the rule (blanks and the host of the links aside)."""
    said, whole = fingerprint(content), message(answer, "")
    after_rule = (fingerprint(RULE + whole), fingerprint(RULE + AS_CHECKED + whole))
    return said == fingerprint(whole) or said.endswith(after_rule)


def fingerprint(content: str) -> str:
    """A message as kb wrote it, to compare: no link definitions (they name the host), blanks as one space."""
    return " ".join(_DEFINITION.sub("", content).split())


class LinkedStream:
    """The model's text as the message's content deltas: markers linked as they come, an incomplete marker and
    blanks at either end held back; then, from the checked answer, the rest of the message."""

    def __init__(self) -> None:
        self.streamed: list[str] = []  # what the model wrote
        self.sent: list[str] = []  # what went out
        self._held = ""

    def feed(self, text: str) -> str:
        """The delta to send for the model's next piece of ``text`` (may be empty)."""
        self.streamed.append(text)
        pending = self._held + text
        if not self.sent:
            pending = pending.lstrip()
        partial = _PARTIAL_MARKER.search(pending)
        ready = pending[: partial.start() if partial else len(pending)].rstrip()
        self._held = pending[len(ready) :]
        out = linked(ready)
        if out:
            self.sent.append(out)
        return out

    def rest(self, answer: dict[str, Any], base: str) -> str:
        """The content still to send once ``answer`` (answer.v1) is done: the sent deltas plus it make the message."""
        tail = linked(self._held.rstrip())  # an incomplete marker the text ended with (never a marker)
        self._held = ""
        if tail:
            self.sent.append(tail)
        whole = message(answer, base)
        if not self.sent:
            return whole
        if answer["grounded"] and "".join(self.streamed).strip() == answer["answer"]:
            return tail + sources_part(answer, base)
        return tail + RULE + (AS_CHECKED if answer["grounded"] else "") + whole


def finish_reason(answer: dict[str, Any]) -> str:
    """``length`` when the model was cut at kb's token limit, else ``stop``."""
    return "length" if answer.get("finish_reason") == "length" else "stop"


def usage(answer: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's usage from kb's own counts (prompt, completion, cached prompt tokens)."""
    counts = answer.get("usage") or {}
    prompt, completion = int(counts.get("prompt_tokens", 0)), int(counts.get("completion_tokens", 0))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": int(counts.get("cached_prompt_tokens", 0))},
    }


def completion(
    completion_id: str, created: int, model: str, answer: dict[str, Any], thread_id: str | None, base: str
) -> dict[str, Any]:
    """A whole ``chat.completion``: the message, usage, and kb's extras (``kb``: answer.v1, ``kb_thread``)."""
    content = message(answer, base)
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": content, "refusal": None},
        "logprobs": None,
        "finish_reason": finish_reason(answer),
    }
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": usage(answer),
        "kb": answer,
        "kb_thread": thread_id,
    }


def chunk(
    completion_id: str, created: int, model: str, delta: dict[str, Any], finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with one choice (``extra``: top-level fields, as the final chunk's ``kb``)."""
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [choice],
        **extra,
    }
