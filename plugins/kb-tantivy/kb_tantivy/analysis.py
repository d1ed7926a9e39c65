"""Text analysis shared by indexing, querying and snippets.

Tantivy's ``simple`` tokenizer keeps a run of CJK characters (Korean, Chinese, Japanese) as one
token, so a word inside a sentence like ``서울특별시의 인구는`` could never be found. Before text
reaches Tantivy, :func:`spread_cjk` rewrites every CJK run into its overlapping character bigrams,
separated by spaces (``인구는`` -> ``인구 구는``; a one-character run stays as it is). The result is
indexed with Tantivy's built-in ``en_stem`` analyzer (simple tokenizer, tokens over 40 bytes
dropped, lowercase, English Snowball stemmer). Being built in, it needs no registration when an
index is opened, so any process can read the index.

Queries go through the same two steps: :func:`spread_cjk`, then :data:`QUERY_ANALYZER`, the same
chain as ``en_stem`` built in Python, which yields exactly the terms the index holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tantivy import Filter, TextAnalyzer, TextAnalyzerBuilder, Tokenizer

INDEX_TOKENIZER = "en_stem"
ANALYZER_VERSION = "en_stem+cjk-bigram-v1"

# Hangul (jamo, compatibility jamo, syllables), Hiragana, Katakana (minus the middle dot, which
# the tokenizer treats as punctuation), CJK ideographs (URO, extension A, B-F), compatibility
# ideographs and half-width Katakana.
CJK_CHARS = (
    "\u1100-\u11ff\u3040-\u30fa\u30fc-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f"
)
CJK_RUN = re.compile(f"[{CJK_CHARS}]+")
WORD_OR_CJK_RUN = re.compile(f"([{CJK_CHARS}]+)|(?:(?![{CJK_CHARS}])\\w)+")

QUERY_ANALYZER: TextAnalyzer = (
    TextAnalyzerBuilder(Tokenizer.simple())
    .filter(Filter.remove_long(40))
    .filter(Filter.lowercase())
    .filter(Filter.stemmer("english"))
    .build()
)

MAX_QUERY_TERMS = 256

# English function words (Lucene's stop set, question words, auxiliaries, pronouns). They are
# indexed, but dropped from a query unless it has nothing else: in a question they carry no topic,
# and in a small knowledge base their idf (they may not occur at all) would rival real keywords.
QUERY_STOPWORDS = frozenset(
    token
    for word in (
        "a an and are as at be but by for if in into is it no not of on or such that the their then there these"
        " they this to was will with what which who whom whose when where why how do does did done doing can"
        " could should would may might must shall am were been being have has had having i me my mine you your"
        " yours we us our ours he him his she her hers its them theirs about from than so too very just please"
    ).split()
    for token in QUERY_ANALYZER.analyze(word)
)


def cjk_grams(run: str) -> list[str]:
    """The overlapping character bigrams of a CJK run (the run itself when it is one character)."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def spread_cjk(text: str) -> str:
    """Replace every CJK run by its bigrams separated by spaces; leave other text untouched."""
    return CJK_RUN.sub(lambda m: " " + " ".join(cjk_grams(m.group())) + " ", text)


def analyze(text: str) -> list[str]:
    """The index terms of ``text``, in order, duplicates kept."""
    return QUERY_ANALYZER.analyze(spread_cjk(text))


def query_terms(text: str) -> list[str]:
    """The distinct index terms of a query without stopwords (all of them if nothing else is
    left), in first-seen order, at most ``MAX_QUERY_TERMS``."""
    terms = list(dict.fromkeys(analyze(text)))
    content = [t for t in terms if t not in QUERY_STOPWORDS]
    return (content or terms)[:MAX_QUERY_TERMS]


def matched_spans(text: str, terms: Iterable[str]) -> list[tuple[int, int]]:
    """Character ranges of ``text`` whose index terms are among ``terms``, in order."""
    wanted = set(terms)
    prefixes = {term[:3] for term in wanted}  # stemming rewrites suffixes only: a cheap pre-filter
    seen: dict[str, bool] = {}
    spans: list[tuple[int, int]] = []
    for match in WORD_OR_CJK_RUN.finditer(text):
        run = match.group(1)
        if run is None:
            word = match.group().lower()
            if word not in seen:
                seen[word] = word[:3] in prefixes and any(t in wanted for t in QUERY_ANALYZER.analyze(word))
            if seen[word]:
                spans.append(match.span())
            continue
        width = min(2, len(run))
        for offset, gram in enumerate(cjk_grams(run)):
            if gram in wanted:
                spans.append((match.start() + offset, match.start() + offset + width))
    return spans


def make_snippet(text: str, terms: Iterable[str], width: int = 220) -> str:
    """A short excerpt of ``text`` around the densest group of matched terms, whitespace collapsed."""
    spans = matched_spans(text, terms)
    start = 0
    if spans:
        lead = width // 6
        best = max(spans, key=lambda s: sum(1 for o in spans if s[0] - lead <= o[0] < s[0] - lead + width))
        start = max(0, best[0] - lead)
        if start:
            space = text.rfind(" ", max(0, start - 20), start)
            start = space + 1 if space >= 0 else start
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", start + width // 2, end)
        end = space if space > 0 else end
    body = " ".join(text[start:end].split())
    return ("…" if start > 0 else "") + body + ("…" if end < len(text) else "")
