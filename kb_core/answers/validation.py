"""Is a generated answer grounded? The checks kb makes itself, never taking the model's word.

:func:`validate` turns a model's text into a :class:`Verdict`:

1. loose citation forms are repaired into ``[#n]`` when unambiguous (:func:`repair_citations`);
2. an empty answer, a refusal phrase, or a marker that was not packed is a refusal
   (``llm_self_judge``);
3. every sentence is checked against the packed passages (:func:`kb_core.answers.attribution.attribute`):
   an answer with no claim, or with a claim nothing packed supports, is refused (``unsupported``
   for the latter; with ``unsupported_claims = "drop"`` such sentences are removed with a note
   instead, as long as a supported claim remains).

``refusal_detail`` names the finer cause (``empty``, ``model_refused``, ``invalid_marker``,
``no_claim``, ``unsupported_claim``), so evaluations can tell refusals on purpose from failures
to cite.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import attrs

from kb_core.answers.attribution import attribute
from kb_core.answers.citations import MARKER_PATTERN, CitableSource, cited_markers, repair_citations
from kb_core.answers.prompts import is_refusal
from kb_core.types import RefusalReason, SentenceSupport

_SAYS_SOMETHING = re.compile(r"[^\W_]")  # a letter or digit outside the citation markers


#: A note names a refused claim by its number, never its words: a withdrawn claim is shown nowhere but
#: ``--explain`` (and ``answer.v1``'s ``sentences``), where the reader asked to see it.
_WHERE = " (kb ask --explain shows each claim)"


@attrs.frozen(kw_only=True)
class Verdict:
    """What validation concluded about a generated answer (built with keywords)."""

    grounded: bool
    refusal_reason: RefusalReason | None = None
    cited: tuple[int, ...] = ()
    invalid: tuple[int, ...] = ()
    note: str = ""
    text: str = ""
    sentences: tuple[SentenceSupport, ...] = ()
    refusal_detail: str | None = None


def judge(text: str, packed_markers: Iterable[int]) -> Verdict:
    """The marker checks alone: refusals for empty text, bare markers, unknown markers, refusal phrases, no markers."""
    available = set(packed_markers)
    markers = cited_markers(text)
    cited = tuple(m for m in markers if m in available)
    invalid = tuple(m for m in markers if m not in available)

    def refuse(detail: str, note: str) -> Verdict:
        return Verdict(
            grounded=False,
            refusal_reason="llm_self_judge",
            cited=cited,
            invalid=invalid,
            note=note,
            text=text,
            refusal_detail=detail,
        )

    if not text.strip():
        return refuse("empty", "the model gave an empty answer")
    if not _SAYS_SOMETHING.search(MARKER_PATTERN.sub("", text)):
        return refuse("no_claim", "the answer is nothing but citations")
    if invalid:
        shown = ", ".join(f"[#{m}]" for m in invalid)
        return refuse(
            "invalid_marker", f"the answer cites {shown}, which is not in the evidence ({len(available)} chunks packed)"
        )
    if is_refusal(text):
        return refuse("model_refused", "the model said the evidence is insufficient")
    if not cited:
        return refuse("no_citation", "the answer cites no evidence with [#n]")
    return Verdict(grounded=True, cited=cited, invalid=invalid, text=text)


def validate(
    text: str,
    question: str,
    passages: Mapping[int, str],
    sources: Sequence[CitableSource],
    unsupported_claims: str = "refuse",
    *,
    yes_no: bool = False,
) -> Verdict:
    """Repair citations, check markers, then check every sentence against the packed ``passages``."""
    text = repair_citations(text, sources)
    marked = judge(text, passages)
    if not marked.grounded and marked.refusal_detail != "no_citation":
        return marked
    sentences = attribute(text, question, passages, sources, yes_no=yes_no)
    claims = [s for s in sentences if s.kind == "claim"]
    unsupported = [s for s in claims if not s.supported]
    if unsupported and unsupported_claims == "drop" and len(unsupported) < len(claims):
        kept = tuple(s for s in sentences if s.supported)
        dropped = ", ".join(str(claims.index(s) + 1) for s in unsupported)
        verdict = _grounded(" ".join(s.text for s in kept), kept, marked.invalid)
        return attrs.evolve(verdict, note=f"dropped {len(unsupported)} unsupported claim(s) (claim {dropped}){_WHERE}")
    if unsupported:
        first = unsupported[0]
        share = f"{first.support:.0%}" if first.support is not None else "none"
        return Verdict(
            grounded=False,
            refusal_reason="unsupported",
            cited=marked.cited,
            invalid=marked.invalid,
            note=f"no packed passage supports claim {claims.index(first) + 1} (best support {share}){_WHERE}",
            text=text,
            sentences=sentences,
            refusal_detail="unsupported_claim",
        )
    if not claims:
        return Verdict(
            grounded=False,
            refusal_reason="llm_self_judge",
            cited=marked.cited,
            invalid=marked.invalid,
            note="the answer says nothing beyond the question",
            text=text,
            sentences=sentences,
            refusal_detail="no_claim",
        )
    return _grounded(text, sentences, marked.invalid)


def _grounded(text: str, sentences: tuple[SentenceSupport, ...], invalid: tuple[int, ...]) -> Verdict:
    cited = tuple(dict.fromkeys(m for s in sentences for m in s.supported_by))
    return Verdict(grounded=True, cited=cited, invalid=invalid, text=text, sentences=sentences)
