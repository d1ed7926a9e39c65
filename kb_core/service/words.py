"""kb's words about an answer, written once: the verdict, the refusal and its reason, the notes, the headings.

Every front end says an answer's outcome in these words: ``kb ask`` and ``kb chat`` on the
terminal, the Markdown of ``/v1`` (:mod:`kb_core.service.markdown`), and ``kb serve``'s page, which
is sent :func:`page_words` (the same templates; the page fills the ``{name}`` places in with the
answer's numbers, as :func:`say` does here). The functions read an ``answer.v1`` document (a
mapping), so a stored answer, a thread's turn and a fresh one are said alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Every sentence and label, by name; ``{name}`` marks a value filled in (:func:`say`).
WORDS: dict[str, str] = {
    "grounded": "grounded",  # the outcome (a page's label capitalises it)
    "refused": "refused",
    "grounded_sentence": "Every claim in the answer is backed by a passage it cites.",
    "check_sentence": "Asked before it answered, the model judged that the passages state the answer (p = {p}).",
    "refusal_line": "kb refused to answer ({reason})",
    "verdict_stated": 'Verdict "{word}" stated with confidence {sure}.',
    "verdict_withheld": 'Verdict withheld: the model leaned to "{word}" (confidence {sure}),'
    " but the passages do not settle it.",
    "low_ocr": "Low OCR confidence",
    "low_ocr_sentence": "It rests only on text read by OCR with low confidence: check it against the page.",
    "kb_note": "kb's note: {note}",
    "sources": "Sources:",
    "sources_title": "Sources",
    "nothing_cited": "Nothing cited; nearest candidates:",
    "cited_heading": "Passages the refused answer cited:",
    "nearest_heading": "Nearest candidates:",
    "cited_title": "Passages the refused answer cited",
    "nearest_title": "Nearest passages",
    "as_checked": "As checked by kb:",
    "ignored": "Note: {markers} contains instructions addressed to the assistant; kb treated them as data"
    " and ignored them.",
    "worked_out": "Worked out by kb: {working} = {result}",
    "operand_in_passage": "{marker}, line {line}",
    "operand_in_question": "from the question",
    "operand_constant": "a constant of the formula",
    "stated_as": "The passage states it as {number}: {marker}, line {line}",
    "line": "{path}, line {start}",
    "lines": "{path}, lines {start}–{end}",
}

#: A refusal's reason in two or three words (a history's badges).
REASON_WORDS: dict[str, str] = {
    "no_chunks": "nothing found",
    "score_gate": "weak evidence",
    "llm_self_judge": "not answered",
    "unsupported": "unsupported claim",
    "generation_error": "model error",
    "computation": "not worked out",
}

#: Why kb refused, in one sentence, by ``refusal_detail`` (the finer cause) ...
DETAIL_SENTENCES: dict[str, str] = {
    "model_refused": "The model said the passages it was given do not answer the question.",
    "empty": "The model gave an empty answer.",
    "no_claim": "The answer said nothing beyond the question and its citations.",
    "invalid_marker": "The answer cited a passage it had not been given.",
    "no_citation": "The answer cited none of the passages it was given.",
    "not_answered": "Asked whether the passages state the answer, the model judged they do not, so kb did not answer.",
    "unsupported_claim": "The answer made a claim that none of the passages supports, so kb did not keep it.",
}

#: ... or by ``refusal_reason`` (``{top_score}`` and ``{score_gate}``: the retrieval's).
REASON_SENTENCES: dict[str, str] = {
    "no_chunks": "Nothing in the knowledge base matched the question, so kb did not ask the model.",
    "score_gate": "The closest passage kb found scores {top_score}, below the {score_gate} it needs to trust"
    " the evidence, so kb did not ask the model.",
    "unsupported": DETAIL_SENTENCES["unsupported_claim"],
    "generation_error": "The language model failed while writing the answer.",
    "computation": "kb could not work the answer out from numbers written in the passages.",
    "llm_self_judge": "The model's answer did not pass kb's checks.",
    "": "kb did not answer.",
}

#: Refusals said in kb's own text (no model was asked); that text lists the nearest passages itself.
KB_WORDS = ("no_chunks", "score_gate")
#: The ``refusal_detail`` of an answer withdrawn by the answer check: its candidates are what it cited.
WITHDRAWN = "not_answered"


def say(name: str, **values: Any) -> str:
    """The sentence ``name`` of :data:`WORDS` with its ``{places}`` filled in."""
    return WORDS[name].format(**values)


def _number(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) and not isinstance(value, bool) else "?"


def reason_sentence(answer: Mapping[str, Any]) -> str:
    """Why kb refused ``answer``, in one sentence."""
    reason = answer.get("refusal_reason") or ""
    detail = answer.get("refusal_detail") or ""
    if reason == "llm_self_judge" and detail in DETAIL_SENTENCES:
        return DETAIL_SENTENCES[detail]
    retrieval = answer.get("retrieval") or {}
    template = REASON_SENTENCES.get(reason, REASON_SENTENCES[""])
    return template.format(
        top_score=_number(retrieval.get("top_score")), score_gate=_number(retrieval.get("score_gate"))
    )


def own_text(answer: Mapping[str, Any]) -> str:
    """What a refused ``answer`` says in kb's own words before its refusal line ('' when none): the score gate's
    text with the nearest passages, or nothing found. A model's text kb refused is never shown."""
    return answer["answer"].strip() if answer.get("refusal_reason") in KB_WORDS else ""


def refusal_line(answer: Mapping[str, Any]) -> str:
    """``kb refused to answer (reason): note`` (the note when there is one, else a full stop)."""
    why = say("refusal_line", reason=answer.get("refusal_reason") or "refused")
    return f"{why}: {answer['note']}" if answer.get("note") else f"{why}."


def verdict_sentence(answer: Mapping[str, Any]) -> str | None:
    """How kb stated a yes/no verdict: with its confidence, or withheld (None for other answers)."""
    verdict = answer.get("verdict")
    if verdict not in ("yes", "no"):
        return None
    sure = _number(answer.get("verdict_confidence"))
    sure = "unknown" if sure == "?" else sure
    word = "Yes" if verdict == "yes" else "No"
    return say("verdict_withheld" if answer.get("verdict_withheld") else "verdict_stated", word=word, sure=sure)


def check_sentence(answer: Mapping[str, Any]) -> str | None:
    """What the answer check found for a grounded answer (None when it was not asked)."""
    check = answer.get("answer_check")
    return say("check_sentence", p=_number(check)) if isinstance(check, int | float) else None


def candidates_heading(answer: Mapping[str, Any], *, title: bool = False) -> str:
    """The heading of a refusal's passages: those the withdrawn answer cited, or the nearest ones."""
    withdrawn = answer.get("refusal_detail") == WITHDRAWN
    if title:
        return say("cited_title" if withdrawn else "nearest_title")
    return say("cited_heading" if withdrawn else "nearest_heading")


def lists_candidates(answer: Mapping[str, Any]) -> bool:
    """Whether a refusal lists its candidates after its reason (the score gate's own text lists them)."""
    return bool(answer.get("candidates")) and answer.get("refusal_reason") != "score_gate"


def ignored_note(markers: Sequence[str]) -> str | None:
    """The note of passages holding instructions kb ignored (``markers``: as the front end writes them)."""
    return say("ignored", markers=", ".join(markers)) if markers else None


def operand_place(operand: Mapping[str, Any], marker: str) -> str:
    """Where a computation's operand comes from: its passage (``marker``, as the front end writes it) and line, the
    question, or the formula (``* 100``)."""
    if operand.get("marker") is not None:
        return say("operand_in_passage", marker=marker, line=operand.get("line"))
    return say("operand_in_question" if operand.get("source") == "question" else "operand_constant")


def place(path: str, start: int, end: int) -> str:
    """A cited passage's place as people read it: ``notes/a.md, lines 3–9``."""
    return say("line", path=path, start=start) if start == end else say("lines", path=path, start=start, end=end)


def page_words() -> dict[str, Any]:
    """Every template, for a page that says answers in these words (it fills the ``{places}`` in)."""
    return {
        "words": dict(WORDS),
        "reasons": dict(REASON_WORDS),
        "details": dict(DETAIL_SENTENCES),
        "reason_sentences": dict(REASON_SENTENCES),
        "own_text_reasons": list(KB_WORDS),  # a refusal whose text is kb's own (shown); any other shows none
    }
