"""Answer evaluation over a golden set, and the comparison of two evaluation reports.

A golden set is JSONL, one question per line::

    {"id": "heliograph-port", "question": "...", "answerable": true,
     "expected_docs": ["notes/heliograph.md"], "must_contain": ["7341"]}

``id`` is optional (default ``q<line>``). The metrics (report ``answer_report.v1``):

``grounded_rate``          grounded answers / answerable questions
``correct_refusal_rate``   refusals / unanswerable questions
``citation_precision``     cited chunks from an expected document / all cited chunks, over the
                           grounded answers to answerable questions (micro-averaged)
``must_contain_rate``      answerable questions with a grounded answer containing every
                           ``must_contain`` string (any case) / answerable questions that list some
``accuracy``               questions handled right: answerable ones grounded with every
                           citation from an expected document and every must-contain string;
                           unanswerable ones refused; rows with a numeric gold: the number right
``grounded_expected_rate`` answerable questions answered grounded with at least one citation of
                           an expected document / answerable questions that list some
``verdict_rate``           grounded answers whose opening verdict (yes / no / mixed) is the
                           ``expected_verdict`` / questions that give one (``maybe`` = mixed)
``grounded_violations``    grounded answers that cite a marker not packed or hold a claim no
                           packed passage supports (kb must keep this at 0)
``refusal_details``        refusals by their finer cause (``score_gate``, ``model_refused``,
                           ``no_citation``, ``unsupported_claim``, ``not_answered``, ...)
``prompt_tokens_p50``      prompt tokens per question that reached the model; ``evaluated_tokens_p50``
                           the same without the tokens reused from the model's prefix cache
``check_curve``            for answer-check thresholds 0.0 .. 0.9, the grounded-with-expected rate
                           and the correct-refusal rate the same answers would give
``number_right_rate``      over rows with a numeric ``answer`` and ``scale`` (a number worked out from
                           the documents): grounded answers citing an expected document that state
                           the gold number (:mod:`kb_core.evaluation.numbers`) / such rows
``grounded_wrong_number_rate`` grounded answers to such rows that do not state the gold number (a
                           wrong number with kb's backing) / such rows
``verdicts``               for sets with ``expected_verdict``: the verdicts stated, right and withheld,
                           their precision and coverage, and the risk-coverage curve over the
                           verdict confidence (:mod:`kb_core.evaluation.verdicts`; ``verdicts.png``
                           beside the report when matplotlib is installed)
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from kb_core.answers.pipeline import AskOptions, ask
from kb_core.evaluation.golden import GoldenQuestion
from kb_core.evaluation.numbers import states_number
from kb_core.evaluation.reports import write_report
from kb_core.evaluation.stats import percentile
from kb_core.evaluation.verdicts import VerdictFigures, plot_curve, verdict_figures
from kb_core.storage.answers import save_eval_run
from kb_core.storage.store import now_iso
from kb_core.types import NOT_ANSWERED, Answer, ModelRef, Progress

if TYPE_CHECKING:
    from kb_core.app import KnowledgeBase


@attrs.frozen
class QuestionResult:
    """How the pipeline handled one golden question."""

    id: str
    question: str
    answerable: bool
    grounded: bool
    refusal_reason: str | None
    correct: bool
    cited: tuple[str, ...]
    cited_expected: int
    must_contain_missing: tuple[str, ...]
    latency_ms: float
    first_token_ms: float | None
    answer_id: str
    answer: str
    note: str
    refusal_detail: str | None = None
    prompt_tokens: int = 0
    cached_tokens: int = 0
    verdict: str | None = None
    verdict_right: bool | None = None
    verdict_confidence: float | None = None
    verdict_withheld: bool = False
    answer_check: float | None = None
    claims: int = 0
    claims_supported: int = 0
    violation: bool = False
    number_right: bool | None = None  # rows with a numeric gold: grounded, expected document cited, number stated
    wrong_number: bool | None = None  # rows with a numeric gold: grounded without the gold number
    expected_packed: bool | None = None  # an expected document among the passages packed (None: not explained)


@attrs.frozen
class CheckPoint:
    """What one answer-check threshold would give on these answers."""

    threshold: float
    grounded_expected_rate: float | None
    correct_refusal_rate: float | None


@attrs.frozen
class AnswerMetrics:
    """Aggregate answer quality and latency over a golden set (rates are None when undefined)."""

    questions: int
    answerable: int
    unanswerable: int
    grounded_rate: float | None
    correct_refusal_rate: float | None
    citation_precision: float | None
    must_contain_rate: float | None
    accuracy: float | None
    latency_ms_p50: float
    latency_ms_p95: float
    first_token_ms_p50: float | None
    refusal_reasons: dict[str, int] = attrs.field(factory=dict)
    refusal_details: dict[str, int] = attrs.field(factory=dict)
    grounded_expected_rate: float | None = None
    verdict_rate: float | None = None
    grounded_violations: int = 0
    prompt_tokens_p50: float | None = None
    evaluated_tokens_p50: float | None = None
    claims: int = 0
    claims_supported: int = 0
    check_curve: tuple[CheckPoint, ...] = ()
    verdicts: VerdictFigures = VerdictFigures()
    number_right_rate: float | None = None
    grounded_wrong_number_rate: float | None = None

    def rates(self) -> dict[str, float | None]:
        """The headline rates by name, in display order."""
        return {
            "grounded_rate": self.grounded_rate,
            "correct_refusal_rate": self.correct_refusal_rate,
            "citation_precision": self.citation_precision,
            "must_contain_rate": self.must_contain_rate,
            "accuracy": self.accuracy,
            "grounded_expected_rate": self.grounded_expected_rate,
            "verdict_rate": self.verdict_rate,
            "number_right_rate": self.number_right_rate,
            "grounded_wrong_number_rate": self.grounded_wrong_number_rate,
        }


@attrs.frozen
class AnswerReport:
    """The result of ``kb eval answers`` (``answer_report.v1``)."""

    run_id: str
    created_at: str
    golden: str
    kb_dir: str
    backend: str
    model: ModelRef | None
    mode: str
    constrained: bool
    score_gate: float
    prompt_template_version: str
    metrics: AnswerMetrics
    results: tuple[QuestionResult, ...]
    report_path: str = ""
    verdict_plot: str | None = None  # the risk-coverage PNG beside the report (labelled sets, matplotlib)


# -- scoring -------------------------------------------------------------------------------------------


def doc_matches(doc_path: str, expected: str) -> bool:
    """True when a knowledge-base path names the expected document (either may carry a folder prefix)."""
    a, b = doc_path.strip("/"), expected.strip("/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _violation(answer: Answer) -> bool:
    """A grounded answer that cites a marker not packed or holds a claim nothing packed supports."""
    if not answer.grounded:
        return False
    packed_markers = {p.marker for p in answer.packed} or {c.marker for c in answer.citations if c.marker is not None}
    return (
        bool(answer.invalid_markers)
        or any(not s.supported for s in answer.sentences)
        or any(c.marker not in packed_markers for c in answer.citations)
    )


def score_answer(golden: GoldenQuestion, answer: Answer) -> QuestionResult:
    """Compare one answer with its golden question."""
    # an answer the answer check withdrew counts what it cited (its candidates), for the check's curve
    counted = answer.citations or (answer.candidates if answer.refusal_detail == NOT_ANSWERED else ())
    cited_paths = [c.citation.path for c in counted]
    expected = sum(1 for p in cited_paths if any(doc_matches(p, e) for e in golden.expected_docs))
    text = answer.answer.casefold()
    missing = (
        tuple(s for s in golden.must_contain if s.casefold() not in text) if answer.grounded else golden.must_contain
    )
    stated = None if golden.answer_number is None else states_number(answer.answer, golden.answer_number, golden.scale)
    number_right = None if stated is None else answer.grounded and expected > 0 and stated
    if number_right is not None:
        correct = number_right
    elif golden.answerable:
        citations_ok = not golden.expected_docs or expected == len(cited_paths)
        correct = answer.grounded and citations_ok and not missing
    else:
        correct = not answer.grounded
    return QuestionResult(
        id=golden.id,
        question=golden.question,
        answerable=golden.answerable,
        grounded=answer.grounded,
        refusal_reason=answer.refusal_reason,
        correct=correct,
        cited=tuple(c.ref for c in counted),
        cited_expected=expected,
        must_contain_missing=missing,
        latency_ms=answer.usage.latency_ms,
        first_token_ms=answer.usage.first_token_ms,
        answer_id=answer.answer_id,
        answer=answer.answer,
        note=answer.note,
        refusal_detail=answer.refusal_detail,
        prompt_tokens=answer.usage.prompt_tokens,
        cached_tokens=answer.usage.cached_prompt_tokens,
        verdict=answer.verdict,
        verdict_right=(answer.grounded and answer.verdict == golden.expected_verdict)
        if golden.expected_verdict
        else None,
        verdict_confidence=answer.verdict_confidence,
        verdict_withheld=answer.verdict_withheld,
        answer_check=answer.answer_check,
        claims=sum(s.kind == "claim" for s in answer.sentences),
        claims_supported=sum(s.kind == "claim" and s.supported for s in answer.sentences),
        violation=_violation(answer),
        number_right=number_right,
        wrong_number=None if stated is None else answer.grounded and not stated,
        expected_packed=_expected_packed(golden, answer),
    )


def _expected_packed(golden: GoldenQuestion, answer: Answer) -> bool | None:
    """Was an expected document among the passages packed for the model (None: not recorded or none expected)?"""
    if not answer.packed or not golden.expected_docs:
        return None
    paths = {p.ref.rsplit("#", 1)[0] for p in answer.packed}
    return any(doc_matches(p, e) for p in paths for e in golden.expected_docs)


def _rate(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


def _passes_check(result: QuestionResult, threshold: float) -> bool:
    """Would ``result`` be grounded under an answer-check ``threshold`` (from the check's recorded value)?"""
    before_check = result.grounded or result.refusal_detail == NOT_ANSWERED
    return before_check and (result.answer_check is None or result.answer_check >= threshold)


def check_curve(golden: Sequence[GoldenQuestion], results: Sequence[QuestionResult]) -> tuple[CheckPoint, ...]:
    """Grounded-with-expected and correct-refusal rates at answer-check thresholds 0.0 .. 0.9."""
    by_id = {g.id: g for g in golden}
    answerable = [r for r in results if r.answerable and by_id[r.id].expected_docs]
    unanswerable = [r for r in results if not r.answerable]
    points = []
    for tenth in range(10):
        t = tenth / 10
        hit = sum(_passes_check(r, t) and r.cited_expected > 0 for r in answerable)
        refused = sum(not _passes_check(r, t) for r in unanswerable)
        points.append(CheckPoint(t, _rate(hit, len(answerable)), _rate(refused, len(unanswerable))))
    return tuple(points)


def summarize(golden: Sequence[GoldenQuestion], results: Sequence[QuestionResult]) -> AnswerMetrics:
    """Aggregate the per-question results into the report's metrics."""
    answerable = [r for r in results if r.answerable]
    unanswerable = [r for r in results if not r.answerable]
    by_id = {g.id: g for g in golden}
    precision_pool = [r for r in answerable if r.grounded and by_id[r.id].expected_docs]
    with_strings = [r for r in answerable if by_id[r.id].must_contain]
    first_tokens = [r.first_token_ms for r in results if r.first_token_ms is not None]
    asked = [r for r in results if r.prompt_tokens > 0]
    with_docs = [r for r in answerable if by_id[r.id].expected_docs]
    with_verdict = [r for r in results if r.verdict_right is not None]
    with_number = [r for r in results if r.number_right is not None]
    return AnswerMetrics(
        questions=len(results),
        answerable=len(answerable),
        unanswerable=len(unanswerable),
        grounded_rate=_rate(sum(r.grounded for r in answerable), len(answerable)),
        correct_refusal_rate=_rate(sum(not r.grounded for r in unanswerable), len(unanswerable)),
        citation_precision=_rate(
            sum(r.cited_expected for r in precision_pool), sum(len(r.cited) for r in precision_pool)
        ),
        must_contain_rate=_rate(
            sum(r.grounded and not r.must_contain_missing for r in with_strings), len(with_strings)
        ),
        accuracy=_rate(sum(r.correct for r in results), len(results)),
        latency_ms_p50=percentile([r.latency_ms for r in results], 0.5),
        latency_ms_p95=percentile([r.latency_ms for r in results], 0.95),
        first_token_ms_p50=percentile(first_tokens, 0.5) if first_tokens else None,
        refusal_reasons=dict(sorted(Counter(r.refusal_reason for r in results if r.refusal_reason).items())),
        refusal_details=dict(sorted(Counter(r.refusal_detail for r in results if r.refusal_detail).items())),
        grounded_expected_rate=_rate(sum(r.grounded and r.cited_expected > 0 for r in with_docs), len(with_docs)),
        verdict_rate=_rate(sum(bool(r.verdict_right) for r in with_verdict), len(with_verdict)),
        grounded_violations=sum(r.violation for r in results),
        prompt_tokens_p50=percentile([r.prompt_tokens for r in asked], 0.5) if asked else None,
        evaluated_tokens_p50=percentile([r.prompt_tokens - r.cached_tokens for r in asked], 0.5) if asked else None,
        claims=sum(r.claims for r in results),
        claims_supported=sum(r.claims_supported for r in results),
        check_curve=check_curve(golden, results),
        verdicts=verdict_figures(results),
        number_right_rate=_rate(sum(bool(r.number_right) for r in with_number), len(with_number)),
        grounded_wrong_number_rate=_rate(sum(bool(r.wrong_number) for r in with_number), len(with_number)),
    )


# -- running ---------------------------------------------------------------------------------------------


def evaluate_answers(
    kb: KnowledgeBase,
    golden: Sequence[GoldenQuestion],
    options: AskOptions = AskOptions(),
    *,
    golden_file: Path | str = "",
    out_dir: Path | None = None,
    progress: Progress | None = None,
) -> AnswerReport:
    """Ask every golden question, score the answers, write report.json and record the run."""
    run_id = f"ans-{uuid.uuid4().hex[:12]}"
    results: list[QuestionResult] = []
    model: ModelRef | None = None
    constrained = kb.config.rag.constrained if options.constrained is None else options.constrained
    for done, question in enumerate(golden, start=1):
        answer = ask(kb, question.question, options)
        model = model or answer.model
        results.append(score_answer(question, answer))
        if progress is not None:
            progress("golden questions", done, len(golden))
    folder = Path(out_dir) if out_dir is not None else kb.directory / "eval" / f"answers-{run_id}"
    metrics = summarize(golden, results)
    plot = (
        plot_curve(metrics.verdicts, folder / "verdicts.png", Path(golden_file).name)
        if metrics.verdicts.labelled
        else None
    )
    report = AnswerReport(
        run_id=run_id,
        created_at=now_iso(),
        golden=str(golden_file),
        kb_dir=str(kb.directory),
        backend=options.backend or kb.config.models.llm.backend,
        model=model,
        mode=options.mode or kb.config.search.mode,
        constrained=constrained,
        score_gate=kb.config.rag.gate(options.mode or kb.config.search.mode),
        prompt_template_version=options.template_version or kb.config.rag.prompt_template_version,
        metrics=metrics,
        results=tuple(results),
        report_path=str(folder / "report.json"),
        verdict_plot=None if plot is None else str(plot),
    )
    write_report(folder, "answer_report.v1", report)
    _record(kb, report)
    return report


def _record(kb: KnowledgeBase, report: AnswerReport) -> None:
    config = {
        k: getattr(report, k)
        for k in ("golden", "backend", "mode", "constrained", "score_gate", "prompt_template_version")
    }
    config["model"] = report.model.id if report.model else None
    save_eval_run(kb.store, report.run_id, report.created_at, "answers", config, report.metrics, report.report_path)
