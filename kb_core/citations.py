"""Citation markers in model answers, special-token removal, and the citation grammar.

The answer pipeline tells the model to cite evidence as ``[#n]``. Only that exact form counts:
``[1]``, ``[ #1 ]``, ``[#1a]``, ``[#1234]``, ``vec![1]`` and Markdown link references
``[label][1]`` are prose, never citations, so they can neither ground an answer nor be mistaken
for one. Nothing here raises on any text.
"""

from __future__ import annotations

import re

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


# -- support: is what the answer says in the passages it cites? ----------------------------------------

_WORD = re.compile(r"[0-9]+(?:[.,][0-9]+)*|[^\W\d_]+", re.UNICODE)
_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
#: Words that carry no claim: function words and the filler models wrap answers in.
FILLER = frozenset(
    "a an the is are was were be been being of to in on at by for with and or nor but it its this that these those as "
    "from about into than then so such also there their they them he she his her we you your our i me my not no yes "
    "do does did has have had can could will would may might must should shall which who whom whose what when where "
    "why how each every per all any some more most very just only both either neither other another "
    "according evidence information provided provide based document documents doc states stated say says said "
    "answer question found mentioned above below given context source sources entry entries cited cite text "
    "insufficient enough note notes here following".split()
)


def _stem(word: str) -> str:
    return word[:5] if len(word) > 5 else word.rstrip("s") or word


def content_units(text: str) -> set[str]:
    """The claim-bearing units of ``text``: numbers, stemmed words (not filler), CJK character bigrams."""
    units: set[str] = set()
    for token in _WORD.findall(MARKER_PATTERN.sub(" ", text.casefold())):
        if _CJK_CHAR.search(token):
            chars = "".join(_CJK_CHAR.findall(token))
            units.update(chars[i : i + 2] for i in range(max(1, len(chars) - 1)))
        elif token[0].isdigit():
            units.add(token.rstrip(".,"))
        elif len(token) > 1 and token not in FILLER:
            units.add(_stem(token))
    return units


def support(answer: str, question: str, evidence: list[str]) -> float | None:
    """The share of what an answer adds to its question that occurs in ``evidence``, or None if it adds nothing.

    A lexical check: an answer whose new words, numbers and CJK bigrams are mostly absent from
    the passages it cites is not supported by them, whatever markers it carries.
    """
    new = content_units(answer) - content_units(question)
    if not new:
        return None
    found = set().union(*(content_units(e) for e in evidence)) if evidence else set()
    return len(new & found) / len(new)
