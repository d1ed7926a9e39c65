"""Sentence-level attribution: every sentence of an answer is checked against the packed passages.

kb does not take the model's word for what supports an answer. An answer is split into
sentences (:func:`split_sentences`, in every script kb supports); each sentence is one of

``claim``          it says something the question did not (new words, numbers, CJK bigrams);
``about_sources``  it only talks about the evidence ("This is found in [CHANGELOG.txt] [#2].");
``no_new_content`` it only restates the question, or is a bare verdict word ("Yes.").

Only claims need support. A claim is *supported* by a passage when most of its new content
units occur in that passage (:data:`CLAIM_SUPPORT`) and every number it adds does. A claim is
supported by the passages the model cited for it when they back it; otherwise kb attributes the
single packed passage that backs it best (``attributed``), and a claim that nothing packed backs
is unsupported. Lexical support is deliberately simple: it cannot tell a right answer from a
copied sentence that misses the question, which is what the answer check in the pipeline is for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import regex

from kb_core.answers.citations import MARKER_PATTERN, CitableSource, find_markers
from kb_core.types import SentenceSupport

#: The least share of a claim's new content that a passage must hold to support it.
CLAIM_SUPPORT = 0.6

_WORD = regex.compile(r"[0-9]+(?:[.,][0-9]+)*|\p{L}[\p{L}\p{M}]*")
_CJK_LETTERS = r"\p{Han}\p{Hangul}\p{Hiragana}\p{Katakana}"
_CJK = regex.compile(f"[{_CJK_LETTERS}]")
#: A word split where its script changes: "5.87km로" is "km" and "로", not one token that loses "km".
_SCRIPT_RUN = regex.compile(f"[{_CJK_LETTERS}]+|[^{_CJK_LETTERS}]+")
#: Bigrams of Korean sentence endings (polite and formal styles): how an answer is phrased, not what it
#: claims. Passages are mostly in plain style (이다, 했다), answers often polite (입니다, 있습니다).
KOREAN_ENDINGS = frozenset("입니 니다 습니 합니 됩니 있습 었습 였습 겠습 세요 니까 어요 아요 해요 예요 에요".split())
#: Words that carry no claim: function words, the filler models wrap answers in, and verdict words.
FILLER = frozenset(
    (
        "a an the is are was were be been being of to in on at by for with and or nor but it its this that these "
        "those as from about into than then so such also there their they them he she his her we you your our i me my "
        "not no yes do does did has have had can could will would may might must should shall which who whom whose "
        "what when where why how each every per all any some more most very just only both either neither other "
        "another according evidence information provided provide based document documents doc states stated say says "
        "said answer question found mentioned above below given context source sources entry entries cited cite text "
        "insufficient enough note notes here following passage passages mixed"
    ).split()
)
#: Words that show a sentence is about the evidence rather than about the world.
_SOURCE_WORDS = regex.compile(
    r"\b(?:evidence|entry|entries|source|sources|document|documents|passage|passages|cited|according|found in|"
    r"mentioned in|stated in|listed in|context)\b|근거|출처|문서|证据|来源|文档|资料",
    regex.IGNORECASE,
)
# A sentence: text up to a terminal mark (a "." inside a number or word does not end it), any markers
# that follow the mark, or a line break.
_SENTENCE = regex.compile(
    r"(?:(?:[^.!?。！？…\n]|\.(?=[\p{L}\p{N}]))+(?:[.!?。！？…]+|(?=\n)|$)|[.!?。！？…]+)(?:[ \t]*\[#[0-9]{1,3}\])*"
)
#: Markers and footnote-like bracketed numbers: citation residue, not content.
_BRACKETED_NUMBERS = regex.compile(r"\[#?[0-9]{1,3}\]")
_ABBREVIATION = regex.compile(r"(?:^|\s)(?:\p{Lu}|(?i:mr|mrs|ms|dr|st|vs|etc|e\.g|i\.e|no|fig|approx|cf))\.$")


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` in order, each with the citation markers that close it.

    Ends at ``.!?…`` followed by a space (not inside ``3.5`` or after ``Dr.``), at ``。！？`` with
    or without a space, and at line breaks. Nothing is lost but surrounding white space.
    """
    sentences: list[str] = []
    for match in _SENTENCE.finditer(text):
        piece = match.group(0).strip()
        if not piece:
            continue
        if sentences and (
            _ABBREVIATION.search(sentences[-1]) or not regex.search(r"[\p{L}\p{N}]", MARKER_PATTERN.sub("", piece))
        ):
            sentences[-1] = f"{sentences[-1]} {piece}"  # an abbreviation's period, or markers alone
        else:
            sentences.append(piece)
    return sentences


def content_units(text: str) -> set[str]:
    """The claim-bearing units of ``text``: numbers, stemmed words (not filler), CJK character bigrams."""
    units: set[str] = set()
    words = _WORD.findall(MARKER_PATTERN.sub(" ", text.casefold()))
    for token in (run for word in words for run in _SCRIPT_RUN.findall(word)):
        if _CJK.search(token):
            bigrams = {token[i : i + 2] for i in range(max(1, len(token) - 1))}
            units.update(bigrams - KOREAN_ENDINGS)
        elif token[0].isdigit():
            units.add(token.rstrip(".,").replace(",", ""))
        elif len(token) > 1 and token not in FILLER:
            units.add(token[:5] if len(token) > 5 else token.rstrip("s") or token)
    return units


def share_supported(new: set[str], passage: set[str]) -> float:
    """The share of ``new`` units found in ``passage``; 0 when a number is missing from it."""
    if not new:
        return 1.0
    if any(unit[0].isdigit() and unit not in passage for unit in new):
        return 0.0
    return len(new & passage) / len(new)


def _source_names(sources: Sequence[CitableSource]) -> list[str]:
    """Document paths and file names (a name without its folder or extension could be a content word)."""
    names: set[str] = set()
    for source in sources:
        names.update({source.doc_path, source.doc_path.rsplit("/", 1)[-1]})
    return sorted((n for n in names if len(n) > 2), key=len, reverse=True)


def _without_sources(sentence: str, names: Sequence[str]) -> str:
    for name in names:
        sentence = regex.sub(regex.escape(name), " ", sentence, flags=regex.IGNORECASE)
    return sentence


def _holds(
    named: set[str], markers: Sequence[int], units: Mapping[int, set[str]], context: Mapping[int, set[str]]
) -> bool:
    """Whether the passages of ``markers``, with their headings and paths, hold every number in ``named``."""
    held: set[str] = set().union(*(units[m] | context.get(m, set()) for m in markers))
    return named <= held


def attribute(
    answer: str,
    question: str,
    passages: Mapping[int, str],
    sources: Sequence[CitableSource] = (),
    *,
    yes_no: bool = False,
) -> tuple[SentenceSupport, ...]:
    """Check every sentence of ``answer`` against the packed ``passages`` (marker -> text).

    Markers the model cited that were not packed are ignored here (the pipeline refuses them).
    For a ``yes_no`` question a sentence that restates it is the claim the verdict rests on, so
    the question's own words count as content that needs support. A number the claim shares
    with the question names what the claim is about ("line 2", "version 2.3.0"): the supporting
    passage, its headings or its document's path must hold it too, so an answer copied from a
    sibling passage about "line 1" is not supported.
    """
    asked = set() if yes_no else content_units(question)
    units = {marker: content_units(text) for marker, text in passages.items()}
    context = {s.marker: content_units(" ".join((s.doc_path, *s.heading_path))) for s in sources}
    names = _source_names(sources)
    checked: list[SentenceSupport] = []
    for sentence in split_sentences(answer):
        cited = tuple(m for m in dict.fromkeys(find_markers(sentence)) if m in passages)
        plain = _without_sources(_BRACKETED_NUMBERS.sub(" ", sentence), names)
        claimed = content_units(plain)
        new = claimed - asked
        named = {u for u in claimed & asked if u[0].isdigit()}  # the numbers that say which thing it is about

        if not new:
            kind = (
                "about_sources"
                if _SOURCE_WORDS.search(sentence) or plain.strip() != MARKER_PATTERN.sub(" ", sentence).strip()
                else "no_new_content"
            )
            checked.append(SentenceSupport(sentence, kind, cited, (), None, False))
            continue
        if cited:
            together = set().union(*(units[m] for m in cited))
            share = share_supported(new, together)
            if share >= CLAIM_SUPPORT and _holds(named, cited, units, context):
                checked.append(SentenceSupport(sentence, "claim", cited, cited, round(share, 3), False))
                continue
        best, best_share = None, 0.0
        for marker, passage in units.items():
            share = share_supported(new, passage) if _holds(named, (marker,), units, context) else 0.0
            if share > best_share:
                best, best_share = marker, share
        if best is not None and best_share >= CLAIM_SUPPORT:
            checked.append(SentenceSupport(sentence, "claim", cited, (best,), round(best_share, 3), True))
        else:
            checked.append(SentenceSupport(sentence, "claim", cited, (), round(best_share, 3), False))
    return tuple(checked)
