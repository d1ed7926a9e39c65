"""``kb eval conversations``: a conversation set asked turn by turn, retrieval and answers scored.

Each turn sees the turns before it as the set's authors intend: their questions (as kb made them
standalone) and their *reference* answers, not kb's. Per turn, kb searches (its default mode)
with the question as asked, with its standalone question and with the set's reference rewrite,
and scores Recall@5 and nDCG@10 of each against ``expected_docs`` (documents are file stems, as in
:mod:`kb_core.evaluation.retrieval`). With answers, it asks the standalone question with the
history (:func:`kb_core.conversations.ask_following`): an answerable turn is right when grounded
with a relevant document among its citations, an unanswerable one when refused.
``ask_reference`` asks the set's reference rewrites as single questions instead: the yardstick.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import attrs

from kb_core.answers.pipeline import AskOptions, kb_pipeline
from kb_core.conversations import EarlierTurn, Standalone, StandaloneMethod, ask_following, standalone
from kb_core.conversations.converse import configured_method
from kb_core.evaluation.conversation_sets import SetConversation, SetTurn
from kb_core.evaluation.reports import write_report
from kb_core.evaluation.retrieval import CHUNK_DEPTH, collapse_to_documents, doc_id_of, ndcg_at_k, recall_at_k
from kb_core.evaluation.stats import percentile
from kb_core.limits import check_text
from kb_core.retrieval.search import search
from kb_core.storage.answers import save_eval_run
from kb_core.storage.store import now_iso
from kb_core.types import Answer, ModelRef, Progress, SearchQuery

if TYPE_CHECKING:
    from kb_core.app import KnowledgeBase


#: Which turns a run asks: all, or only the answerable or the unanswerable ones.
AnswerTurns = Literal["all", "answerable", "unanswerable"]


@attrs.frozen
class TurnResult:
    """One turn: what kb searched, what each way of searching found, and the answer's outcome."""

    conversation: str
    position: int
    question: str
    standalone: str
    method: StandaloneMethod
    rewrite_ms: float
    rewrite_prompt_tokens: int
    answerable: bool | None
    needed_rewrite: bool | None  # the reference rewrite differs from the question (None without one)
    recall_at_5_asked: float | None = None  # None: a turn without relevant documents
    recall_at_5_standalone: float | None = None
    recall_at_5_reference: float | None = None
    ndcg_at_10_asked: float | None = None
    ndcg_at_10_standalone: float | None = None
    ndcg_at_10_reference: float | None = None
    answer_id: str | None = None  # None: retrieval only
    grounded: bool | None = None
    refusal_reason: str | None = None
    cited_relevant: bool | None = None
    correct: bool | None = None
    latency_ms: float | None = None
    answer_check: float | None = None  # P(Yes) of the answer check, for replaying its threshold


@attrs.frozen
class ConversationMetrics:
    """The averages of a run; answer figures are None with retrieval only."""

    conversations: int
    turns: int
    retrieval_turns: int
    recall_at_5_asked: float | None
    recall_at_5_standalone: float | None
    recall_at_5_reference: float | None
    ndcg_at_10_asked: float | None
    ndcg_at_10_standalone: float | None
    ndcg_at_10_reference: float | None
    gap_closed: float | None  # (standalone - asked) / (reference - asked), Recall@5
    unchanged_turns: int  # retrieval turns whose reference rewrite is the question itself
    recall_at_5_asked_unchanged: float | None
    recall_at_5_standalone_unchanged: float | None
    rewritten_turns: int  # turns kb made standalone (the others were searched as asked, at no cost)
    rewrite_ms_p50: float  # over the rewritten turns
    rewrite_ms_p95: float
    rewrite_prompt_tokens_p50: float
    answerable: int = 0
    grounded_relevant_rate: float | None = None
    unanswerable: int = 0
    correct_refusal_rate: float | None = None
    latency_ms_p50: float | None = None
    latency_ms_p50_first_turns: float | None = None
    latency_ms_p50_later_turns: float | None = None


@attrs.frozen
class ConversationReport:
    """What ``kb eval conversations`` measured (``conversation_report.v1``)."""

    run_id: str
    created_at: str
    set_file: str
    mode: str
    method: StandaloneMethod
    answers: bool
    ask_reference: bool
    model: ModelRef | None
    metrics: ConversationMetrics
    results: tuple[TurnResult, ...]
    report_path: str


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 4) if present else None


def _ranking(kb: KnowledgeBase, text: str, mode: str) -> list[str]:
    hits = search(kb, SearchQuery(text=text, k=CHUNK_DEPTH, mode=mode, snippets=False)).hits
    return collapse_to_documents(doc_id_of(h.citation.path) for h in hits)


def _retrieval(kb: KnowledgeBase, turn: SetTurn, searched: str, mode: str) -> dict[str, float | None]:
    """Recall@5 and nDCG@10 of the three ways of searching (None each without relevant documents)."""
    if not turn.expected_docs:
        return {}
    judgements = dict.fromkeys(turn.expected_docs, 1)
    texts = {"asked": turn.question, "standalone": searched, "reference": turn.reference_rewrite or turn.question}
    rankings: dict[str, list[str]] = {}
    figures: dict[str, float | None] = {}
    for way, text in texts.items():
        if text not in rankings:  # the same text is searched once
            rankings[text] = _ranking(kb, text, mode)
        figures[f"recall_at_5_{way}"] = round(recall_at_k(rankings[text], judgements, 5), 4)
        figures[f"ndcg_at_10_{way}"] = round(ndcg_at_k(rankings[text], judgements, 10), 4)
    return figures


def _scored(turn: SetTurn, answer: Answer) -> dict[str, object]:
    relevant = set(turn.expected_docs)
    cited = any(doc_id_of(c.citation.path) in relevant for c in answer.citations)
    correct = (
        None if turn.answerable is None else (answer.grounded and cited if turn.answerable else not answer.grounded)
    )
    return {
        "answer_id": answer.answer_id,
        "grounded": answer.grounded,
        "refusal_reason": answer.refusal_reason,
        "cited_relevant": cited,
        "correct": correct,
        "latency_ms": answer.usage.latency_ms,
        "answer_check": answer.answer_check,
    }


def evaluate_conversations(
    kb: KnowledgeBase,
    conversations: Sequence[SetConversation],
    options: AskOptions = AskOptions(),
    *,
    method: StandaloneMethod | None = None,
    answers: bool = True,
    answer_turns: AnswerTurns = "all",
    ask_reference: bool = False,
    set_file: Path | str = "",
    out_dir: Path | None = None,
    progress: Progress | None = None,
) -> ConversationReport:
    """Run every conversation turn by turn, score retrieval (and answers), write report.json, record the run.

    ``answer_turns`` asks only the answerable or the unanswerable turns (the others are made
    standalone and searched): the turns after them see the reference answers either way.
    """
    run_id = f"conv-{uuid.uuid4().hex[:12]}"
    mode = options.mode or kb.config.search.mode
    method = method or configured_method(kb)
    llm = lambda: kb.language_model(options.backend)  # noqa: E731
    total = sum(len(c.turns) for c in conversations)
    results: list[TurnResult] = []
    model: ModelRef | None = None
    for conversation in conversations:
        earlier: list[EarlierTurn] = []
        for position, turn in enumerate(conversation.turns, start=1):
            answer: Answer | None = None
            asking = answers and (answer_turns == "all" or turn.answerable is (answer_turns == "answerable"))
            asked = (turn.reference_rewrite or turn.question) if ask_reference else turn.question
            question = check_text(asked, "question")  # a set's question comes in here: checked once
            if ask_reference:
                searched = Standalone(question, "as_asked")
                answer = kb_pipeline(kb, options.backend).ask(question, options) if asking else None
            elif asking:
                searched, answer = ask_following(kb, question, earlier, options, method=method)
            else:
                searched = standalone(question, earlier, method, llm)
            needed = None if not turn.reference_rewrite else turn.reference_rewrite.strip() != turn.question.strip()
            figures: dict[str, object] = dict(_retrieval(kb, turn, searched.question, mode))
            if answer is not None:
                model = model or answer.model
                figures.update(_scored(turn, answer))
            results.append(
                TurnResult(
                    conversation.id,
                    position,
                    turn.question,
                    searched.question,
                    searched.method,
                    searched.ms,
                    searched.prompt_tokens,
                    turn.answerable,
                    needed,
                    **figures,  # type: ignore[arg-type]
                )
            )
            earlier.append(EarlierTurn(searched.question, turn.reference_answer))
            if progress is not None:
                progress("turns", len(results), total)
    folder = Path(out_dir) if out_dir is not None else kb.directory / "eval" / f"conversations-{run_id}"
    report = ConversationReport(
        run_id,
        now_iso(),
        str(set_file),
        mode,
        method,
        answers,
        ask_reference,
        model,
        summarize(len(conversations), results),
        tuple(results),
        str(folder / "report.json"),
    )
    write_report(folder, "conversation_report.v1", report)
    config = {"set_file": report.set_file, "mode": mode, "method": method, "answers": answers}
    save_eval_run(kb.store, run_id, report.created_at, "conversations", config, report.metrics, report.report_path)
    return report


def summarize(conversations: int, results: Sequence[TurnResult]) -> ConversationMetrics:
    """The run's averages over its turns."""
    scored = [r for r in results if r.recall_at_5_asked is not None]
    unchanged = [r for r in scored if r.needed_rewrite is False]
    asked, mine, reference = (
        _mean([getattr(r, f"recall_at_5_{w}") for r in scored]) for w in ("asked", "standalone", "reference")
    )
    gap = None
    if asked is not None and mine is not None and reference is not None and reference != asked:
        gap = round((mine - asked) / (reference - asked), 4)
    rewritten = [r for r in results if r.method != "as_asked"]
    costs = [r.rewrite_ms for r in rewritten]  # what a rewrite adds to the turn that needs one
    answered = [r for r in results if r.answer_id is not None]
    answerable = [r for r in answered if r.answerable]
    unanswerable = [r for r in answered if r.answerable is False]
    timed = [(r.position, r.latency_ms + r.rewrite_ms) for r in answered if r.latency_ms is not None]  # a whole turn
    latencies = [ms for _, ms in timed]
    first = [ms for position, ms in timed if position == 1]
    later = [ms for position, ms in timed if position > 1]
    return ConversationMetrics(
        conversations=conversations,
        turns=len(results),
        retrieval_turns=len(scored),
        recall_at_5_asked=asked,
        recall_at_5_standalone=mine,
        recall_at_5_reference=reference,
        ndcg_at_10_asked=_mean([r.ndcg_at_10_asked for r in scored]),
        ndcg_at_10_standalone=_mean([r.ndcg_at_10_standalone for r in scored]),
        ndcg_at_10_reference=_mean([r.ndcg_at_10_reference for r in scored]),
        gap_closed=gap,
        unchanged_turns=len(unchanged),
        recall_at_5_asked_unchanged=_mean([r.recall_at_5_asked for r in unchanged]),
        recall_at_5_standalone_unchanged=_mean([r.recall_at_5_standalone for r in unchanged]),
        rewritten_turns=len(rewritten),
        rewrite_ms_p50=round(percentile(costs, 0.5), 1),
        rewrite_ms_p95=round(percentile(costs, 0.95), 1),
        rewrite_prompt_tokens_p50=percentile([r.rewrite_prompt_tokens for r in rewritten], 0.5),
        answerable=len(answerable),
        grounded_relevant_rate=_mean([float(bool(r.correct)) for r in answerable]),
        unanswerable=len(unanswerable),
        correct_refusal_rate=_mean([float(bool(r.correct)) for r in unanswerable]),
        latency_ms_p50=round(percentile(latencies, 0.5), 1) if latencies else None,
        latency_ms_p50_first_turns=round(percentile(first, 0.5), 1) if first else None,
        latency_ms_p50_later_turns=round(percentile(later, 0.5), 1) if later else None,
    )
