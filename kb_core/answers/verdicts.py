"""The verdict that opens an answer to a yes/no question: how sure kb is of it, and withholding it.

The model's first word ("Yes."/"No.") is decided on its first token's P(no) share against
``[rag] verdict_no_share`` (:class:`~kb_core.types.VerdictOpening`). Measured on yes/no/maybe
questions over abstracts, that share alone barely tells right verdicts from wrong ones, and the
answer check tells them apart not at all; what does is whether the passages the answer cites,
and the answer's own sentences, *agree* with the verdict. So kb's confidence in a verdict is

* the model's margin: how far the share lies from the threshold, on the side of the verdict (0 at
  the threshold, 1 when the model gave the other word no probability), times
* agreement (1 or 0): a "yes" agrees when neither the cited passages report a negative finding
  ("no significant difference", "did not", "was not associated") nor the answer's sentences after
  the verdict negate; a "no" agrees when the cited passages do report one.

A verdict below ``[rag] verdict_confidence`` is withheld: the answer opens with the template's
``unsettled`` sentence ("The passages do not settle whether the answer is yes or no.") and goes on
with what the passages report, cited and checked as any answer. Backends without token
probabilities give no share, hence no confidence: their verdicts are withheld.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs
import regex

from kb_core.answers.prompts import PromptTemplate
from kb_core.answers.questions import QuestionKind
from kb_core.answers.validation import Verdict
from kb_core.config import RagConfig
from kb_core.types import VerdictOpening

#: A passage reporting that something was not found: the evidence against a "yes".
NEGATIVE_FINDING = regex.compile(
    r"\b(?:no|not|neither|nor|without)\b[^.;]{0,40}\b(?:significant(?:ly)?|differ\w*|associat\w*|effects?"
    r"|evidence|correlat\w*|improv\w*|benefits?|changes?|relationship|predict\w*|impact|influence)\b"
    r"|\b(?:did|was|were|does|do|is|are) not\b|\bno longer\b|\bsimilar\b|\bcomparable\b"
    r"|유의한 차이가 없|차이가 없|관련이 없|효과가 없|않았|않는다|없었"
    r"|无显著|没有显著|无明显|没有明显|无差异|无关|未见|并未|没有发现",
    regex.IGNORECASE,
)
#: A negation in the answer's own words after its verdict.
NEGATION = regex.compile(
    r"\b(?:no|not|neither|nor|without|none|fail(?:s|ed)?|cannot|unlikely|lack(?:s|ed)?|similar|comparable"
    r"|unchanged|insignificant)\b|n't|않|없|아니|不|没|未|无",
    regex.IGNORECASE,
)
#: The verdict word and the punctuation after it, at the opening of an answer.
_OPENING = regex.compile(r"^\W*(?:(?:yes|no)\b|예|네|아니(?:요|오)|是|否|不是)[\p{P}\s]*", regex.IGNORECASE)


def verdict_opening(template: PromptTemplate, kind: QuestionKind, no_share: float) -> VerdictOpening | None:
    """For a yes/no question, how the model's first word is decided (``[rag] verdict_no_share``); else None.

    A choice question ("... north or south island?") is answered like a yes/no one, but gets no verdict.
    """
    words = template.verdict_words
    if words is None or no_share == 0.5 or not kind.wants_verdict:
        return None
    return VerdictOpening(words[0], words[1], no_share, template.verdict_alternatives)


def opening_margin(verdict: str | None, no_share: float | None, threshold: float) -> float | None:
    """The model's margin for a ``yes`` or ``no`` opening from its first token's P(no) share; else None.

    >>> opening_margin("no", 0.55, 0.1)
    0.5
    >>> opening_margin("yes", 0.05, 0.1)
    0.5
    """
    if verdict not in ("yes", "no") or no_share is None or not 0.0 < threshold < 1.0:
        return None
    margin = (no_share - threshold) / (1.0 - threshold) if verdict == "no" else (threshold - no_share) / threshold
    return round(min(1.0, max(0.0, margin)), 4)


def agrees(verdict: str, answer: str, evidence: Iterable[str]) -> bool:
    """Whether the cited ``evidence`` and the ``answer``'s words after its verdict agree with the verdict.

    >>> agrees("yes", "Yes. Aspirin lowered the risk [#1].", ["Aspirin lowered the risk by 20%."])
    True
    >>> agrees("yes", "Yes. Aspirin lowered the risk [#1].", ["There was no significant difference."])
    False
    >>> agrees("no", "No. It made no difference [#1].", ["There was no significant difference."])
    True
    """
    reported_negative = any(NEGATIVE_FINDING.search(text) for text in evidence)
    if verdict == "no":
        return reported_negative
    return not reported_negative and not NEGATION.search(_OPENING.sub("", answer, count=1))


def verdict_confidence(
    verdict: str | None, no_share: float | None, threshold: float, answer: str, evidence: Iterable[str]
) -> float | None:
    """kb's confidence in a yes/no verdict: the model's margin if the evidence agrees, else 0 (None: no verdict)."""
    margin = opening_margin(verdict, no_share, threshold)
    if margin is None or verdict is None:
        return None
    return margin if agrees(verdict, answer, evidence) else 0.0


def withheld(answer: str, unsettled: str) -> str:
    """``answer`` with its opening verdict replaced by the ``unsettled`` sentence.

    >>> withheld("Yes. The study found a 20% drop [#1].", "The passages do not settle it.")
    'The passages do not settle it. The study found a 20% drop [#1].'
    >>> withheld("Yes, aspirin helps [#1].", "The passages do not settle it.")
    'The passages do not settle it. Aspirin helps [#1].'
    """
    rest = _OPENING.sub("", answer, count=1)
    return f"{unsettled} {rest[:1].upper()}{rest[1:]}".strip()


def state_verdict(
    verdict: Verdict,
    word: str | None,
    no_share: float | None,
    passages: Mapping[int, str],
    rag: RagConfig,
    template: PromptTemplate,
) -> tuple[Verdict, float | None, bool]:
    """A grounded yes/no answer's confidence in its verdict ``word``, and the answer with the verdict
    withheld below ``[rag] verdict_confidence``: (verdict, confidence, withheld).

    ``passages`` are the packed passages by marker (the ones the answer cites are its evidence).
    """
    if not verdict.grounded or word not in ("yes", "no"):
        return verdict, None, False
    evidence = [passages[m] for m in verdict.cited if m in passages]
    confidence = verdict_confidence(word, no_share, rag.verdict_no_share, verdict.text, evidence)
    if rag.verdict_confidence <= 0 or not template.unsettled:
        return verdict, confidence, False
    if confidence is not None and confidence >= rag.verdict_confidence:
        return verdict, confidence, False
    return attrs.evolve(verdict, text=withheld(verdict.text, template.unsettled)), confidence, True
