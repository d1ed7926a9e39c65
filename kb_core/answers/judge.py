"""The answer check: after a grounded answer, do the passages state the answer to the question?

The template's judge is a prompt of its own (a short system message, the packed entries, the
question), asked of a backend that gives token probabilities (:class:`~kb_core.plugin.AnswerChecker`);
a backend that caches prompt prefixes evaluates only the entries and the question again.
"""

from __future__ import annotations

import time

import attrs

from kb_core.answers.prompts import QuestionPrompt
from kb_core.answers.streaming import elapsed_ms
from kb_core.answers.validation import Verdict
from kb_core.extend.contracts import AnswerChecker, LanguageModel
from kb_core.types import NOT_ANSWERED, GenerateRequest


def check_first(
    llm: LanguageModel, prompt: QuestionPrompt, entries: list[str], threshold: float
) -> tuple[float | None, float]:
    """P(Yes) that the passages state the answer, and its ms, asked before the answer is written (the judge reads
    the passages and the question only); (None, 0) when no check applies (see :func:`answer_check`)."""
    judge, user = prompt.template.judge, prompt.judge_user("\n\n".join(entries))
    if judge is None or user is None or not isinstance(llm, AnswerChecker) or threshold <= 0:
        return None, 0.0
    began = time.perf_counter()
    return round(llm.yes_probability(GenerateRequest(system=judge.system, user=user)), 4), elapsed_ms(began)


def answer_check(
    llm: LanguageModel,
    prompt: QuestionPrompt,
    entries: list[str],
    verdict: Verdict,
    threshold: float,
    asked: tuple[float | None, float] | None = None,
) -> tuple[Verdict, float | None, float]:
    """The verdict after the check (withdrawn when P(Yes) is below ``threshold``), P(Yes), its ms.

    Only a grounded answer is judged; a ``threshold`` of 0, a template without a judge or a
    backend without token probabilities leaves it as it is (P(Yes) None). ``asked``: what
    :func:`check_first` found already (the check is not asked again).
    """
    if not verdict.grounded:
        return verdict, None, 0.0
    check, took = asked if asked is not None else check_first(llm, prompt, entries, threshold)
    if check is None:
        return verdict, None, 0.0
    if check >= threshold:
        return verdict, check, took
    note = (
        f"asked whether the passages state the answer, the model judged they do not "
        f"(p={check:.2f}, below {threshold:.2f})"
    )
    withdrawn = attrs.evolve(
        verdict,
        grounded=False,
        refusal_reason="llm_self_judge",
        note=note,
        text=prompt.template.unanswered_refusal,
        refusal_detail=NOT_ANSWERED,
    )
    return withdrawn, check, took
