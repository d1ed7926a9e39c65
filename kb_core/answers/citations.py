"""Citation markers in model answers, special-token removal, and the citation grammar.

The answer pipeline tells the model to cite evidence as ``[#n]``. Only that exact form counts:
``[1]``, ``[ #1 ]``, ``[#1a]``, ``[#1234]``, ``vec![1]`` and Markdown link references
``[label][1]`` are prose, never citations, so they can neither ground an answer nor be mistaken
for one. Nothing here raises on any text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

#: The strict citation marker: ``[#`` one to three ASCII digits ``]``.
MARKER_PATTERN = re.compile(r"\[#([0-9]{1,3})\]")

#: Longest special token :func:`strip_special_tokens` removes (the streaming filter's look-behind).
MAX_SPECIAL_TOKEN_CHARS = 48

# Every pattern starts with "<", ends with ">" and has neither inside: that keeps removal local,
# so the streaming filter removes exactly what removing from the whole text would.
SPECIAL_TOKEN_PATTERN = re.compile(
    r"<\|[^<>|\s]{1,40}\|>"  # <|im_start|>, <|eot_id|>, <|start_header_id|>, <|endoftext|>
    r"|<｜[^<>｜\s]{1,40}｜>"  # <｜end▁of▁sentence｜> (full-width bars)
    r"|</?(?:tool_call|tool_response|tool_calls|function_call|functions|tools|s)>"
)


def find_markers(text: str) -> list[int]:
    """Every strict ``[#n]`` marker in ``text``, in order, repeats included."""
    return [int(m.group(1)) for m in MARKER_PATTERN.finditer(text)]


def cited_markers(text: str) -> tuple[int, ...]:
    """The distinct markers ``text`` cites, in order of first appearance."""
    return tuple(dict.fromkeys(find_markers(text)))


def strip_special_tokens(text: str) -> str:
    """``text`` without chat-template or tool-call tokens (``<|im_start|>``, ``<tool_call>`` ...)."""
    return SPECIAL_TOKEN_PATTERN.sub("", text)


class SpecialTokenFilter:
    """Removes special tokens from a stream of text pieces as they arrive.

    A piece that might be the start of a special token (a ``<`` not yet closed) is held back
    until it is resolved, so the concatenated output always equals
    ``strip_special_tokens(all input)``.
    """

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, piece: str) -> str:
        """Accept one piece; return the text that is now safe to show."""
        buffer = self._pending + piece
        cut = buffer.rfind("<")
        if cut != -1 and ">" not in buffer[cut:] and len(buffer) - cut < MAX_SPECIAL_TOKEN_CHARS:
            self._pending = buffer[cut:]
            buffer = buffer[:cut]
        else:
            self._pending = ""
        return strip_special_tokens(buffer)

    def flush(self) -> str:
        """The text still held back (call once the stream has ended)."""
        rest, self._pending = self._pending, ""
        return strip_special_tokens(rest)


def citation_grammar(marker_count: int) -> str:
    """A GBNF grammar for free text in which ``[`` can only open a marker ``[#1]``..``[#n]``.

    Used for constrained generation: a model under this grammar cannot cite a marker that is
    not in the packed context (nor write any other bracket).
    """
    if marker_count < 1:
        raise ValueError("a citation grammar needs at least one marker")
    markers = " | ".join(f'"{n}"' for n in range(1, marker_count + 1))
    return "\n".join(
        (
            "root ::= item*",
            r"item ::= [^\x5B] | cite",
            f'cite ::= "[#" ({markers}) "]"',
        )
    )


# -- repair: the loose citation forms small models write ---------------------------------------------


@attrs.frozen
class CitableSource:
    """What citation repair knows of one packed evidence entry: its marker, document and headings."""

    marker: int
    doc_path: str
    heading_path: tuple[str, ...] = ()


_NUMBER_LIST = r"#?\s*[0-9]{1,3}(?:\s*(?:,|;|、|，|and|&)\s*#?\s*[0-9]{1,3})*"
#: Bracketed number lists ``[1]``, ``[#1, #2]``, ``[ #1 ]``, ``［1］``, ``【#1】``, and ``(#1)`` / ``(#1, #2)``
#: (parentheses only with ``#``: ``(1)`` is how prose numbers a list). Not after a word character or ``!``
#: (``vec![1]``); after ``]`` only when that bracket holds numbers too (``[1][2]``, not ``[label][1]``).
_LOOSE_NUMBERS = re.compile(
    rf"(?<![\w!])(?:[\[［【]\s*(?P<b>{_NUMBER_LIST})\s*[\]］】]|\(\s*(?P<p>#\s*[0-9]{{1,3}}(?:\s*[,;]\s*#?\s*[0-9]{{1,3}})*)\s*\))"
)
#: A bare ``#n`` right after a sentence's end mark (``…公里。#1``), or closing the text.
_BARE_AFTER_END = re.compile(r"(?<=[.!?。！？])([ \t]?)#([0-9]{1,3})(?![0-9\w])")
#: A copied evidence header: ``[#2 doc=notes/a.md heading=... span=L1-L9]`` (one line at most).
_COPIED_HEADER = re.compile(r"\[#([0-9]{1,3})\s[^\]\n]{0,300}\]")
#: A bracketed name: ``[CHANGELOG.txt]``, ``[doc=notes/a.md]``, ``[Release history]``.
_ENDS_WITH_NUMBER_BRACKET = re.compile(rf"[\[［【]\s*{_NUMBER_LIST}\s*[\]］】]$")
_BRACKETED_NAME = re.compile(
    r"(?<![\w!\]])[\[［【]\s*(?:doc\s*=\s*)?(?P<name>[^\[\]［］【】\n#]{1,120}?)\s*[\]］】](?![(\[])"
)


def _markers(numbers: str, packed: set[int]) -> list[int] | None:
    found = [int(n) for n in re.findall(r"[0-9]{1,3}", numbers)]
    return found if found and all(n in packed for n in found) else None


def _name_index(sources: Sequence[CitableSource]) -> dict[str, set[int]]:
    """Each name a source can be called by (path, file name, stem, last heading), casefolded -> markers."""
    index: dict[str, set[int]] = {}
    for source in sources:
        path = source.doc_path.casefold()
        base = path.rsplit("/", 1)[-1]
        names = {path, base, base.rsplit(".", 1)[0]}
        if source.heading_path:
            names.add(source.heading_path[-1].casefold().strip())
        for name in names:
            if name:
                index.setdefault(name, set()).add(source.marker)
    return index


def repair_citations(text: str, sources: Sequence[CitableSource]) -> str:
    """``text`` with the loose citation forms models write turned into strict ``[#n]`` markers.

    A loose form becomes a marker only when the mapping is unambiguous: numbers that were all
    packed (``[1]``, ``[#1, #2]``, ``(#1)``, a copied ``[#1 doc=...]`` header, a bare ``#1`` right
    after a sentence's end mark), or a bracketed
    document path, file name or heading that names exactly one packed entry. Everything else is
    left as it was, so it stays prose (or, for a strict marker that was not packed, invalid).
    Strict markers are never changed, and repairing twice changes nothing more.
    """
    packed = {s.marker for s in sources}

    def numbers(match: re.Match[str]) -> str:
        before = match.string[max(0, match.start() - 40) : match.start()]
        after_label = before.endswith(("]", "］", "】")) and not _ENDS_WITH_NUMBER_BRACKET.search(before)
        found = _markers(match.group("b") or match.group("p"), packed)
        if found is None or after_label or MARKER_PATTERN.fullmatch(match.group(0)):
            return match.group(0)
        return "".join(f"[#{n}]" for n in found)

    def header(match: re.Match[str]) -> str:
        return f"[#{match.group(1)}]" if int(match.group(1)) in packed else match.group(0)

    names = _name_index(sources)

    def name(match: re.Match[str]) -> str:
        markers = names.get(match.group("name").casefold().strip(), set())
        return f"[#{next(iter(markers))}]" if len(markers) == 1 else match.group(0)

    def bare(match: re.Match[str]) -> str:
        return f"{match.group(1)}[#{match.group(2)}]" if int(match.group(2)) in packed else match.group(0)

    text = _BARE_AFTER_END.sub(bare, text)
    text = _COPIED_HEADER.sub(header, text)
    text = _LOOSE_NUMBERS.sub(numbers, text)
    return _BRACKETED_NAME.sub(name, text)
