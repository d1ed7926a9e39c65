"""The answer pipeline: retrieve -> gate -> pack -> prompt -> generate -> validate -> check -> verdict -> persist.

An answer is *grounded* only when every marker it cites (after repairing the loose forms small
models write) names a packed chunk, it did not say the evidence is insufficient, it makes at
least one claim, every claim is supported by a packed passage (checked by kb sentence by
sentence, see :mod:`kb_core.answers.validation`), and, when the model offers it, the answer check
(the template's judge, a separate prompt asked after the answer) says the passages state the answer
to the question. A grounded answer to a yes/no question states its verdict ("Yes."/"No.") only
when kb is confident of it, else says the passages do not settle it (:mod:`kb_core.answers.verdicts`).
Everything else is a refusal with a reason:

``no_chunks``        retrieval found nothing (or none of its chunks still exist); no model call.
``score_gate``       the best hit scores below the gate of its search mode (``[rag] score_gates``); no model call.
``llm_self_judge``   the model refused, said nothing, cited a marker it was not given, or, asked
                     whether the passages state the answer, judged that they do not
                     (``refusal_detail`` ``not_answered``; threshold ``[rag] answer_check``).
``unsupported``      a claim of the answer is not in any packed passage: a hallucination,
                     with or without a citation.
``generation_error`` the model's stream ended with an error.
``computation``      a number to be worked out could not be checked (:mod:`kb_core.answers.computed`: the
                     model writes the computation, kb works it out and checks every operand), and the
                     ordinary answer it falls back to (from the passages any question reads) states no
                     number a passage gives for what is asked,
                     or no passage line could state one, so none is asked for (:mod:`kb_core.answers.stated`;
                     ``refusal_detail`` ``not_stated``).

A refusal's ``answer`` is kb's own sentence, never the model's text (that stays in its ``sentences``).

A follow-up in a thread (:mod:`kb_core.conversations`) arrives made standalone, with the turns
before it as a ``history`` block the model reads before the question (never evidence: every
check above holds as for a single question).

Every answer, refusals included, is written to the ``answers`` table. The token loop runs on
the calling thread; ``on_token`` receives the answer's text only as far as kb has checked it
(:mod:`kb_core.answers.release`: a sentence at a time; a refusal sends none; ``""`` while text is
held back), and an ``on_token`` that fails is dropped without stopping the generation, unless it
raises :class:`~kb_core.errors.Cancelled`: then the model stops and nothing is stored.
"""

from __future__ import annotations

import logging
import secrets
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from kb_core.answers import computed
from kb_core.answers.citations import CitableSource, citation_grammar
from kb_core.answers.computation import asks_for_computation
from kb_core.answers.counted import threshold_of
from kb_core.answers.evidence import Evidence, packed_evidence, read_beside
from kb_core.answers.evidence_fit import COMPUTATION_CANDIDATES, by_evidence_fit
from kb_core.answers.injection import without_instructions
from kb_core.answers.judge import answer_check, check_first
from kb_core.answers.operations import counts_rows
from kb_core.answers.packing import WHOLE, select, unread_note, with_whole_document
from kb_core.answers.prompts import question_prompt
from kb_core.answers.questions import kind_of, verdict_of
from kb_core.answers.release import CheckedRelease
from kb_core.answers.run import AskOptions, QuestionRun, citation_of
from kb_core.answers.stated import NOT_STATABLE, NOT_STATED, can_be_stated, stated_answer
from kb_core.answers.streaming import TokenCallback, elapsed_ms, stream_answer
from kb_core.answers.tables import holds_table
from kb_core.answers.validation import Verdict, validate
from kb_core.answers.verdicts import state_verdict, verdict_opening
from kb_core.config import Config
from kb_core.config_schema import UNSUPPORTED_POLICIES
from kb_core.crashes import inside_model
from kb_core.errors import KbError
from kb_core.extend.contracts import LanguageModel
from kb_core.extend.record_store import RecordStore
from kb_core.limits import CheckedText, check_k, check_text
from kb_core.retrieval.access import asking_person
from kb_core.retrieval.search import check_mode_and_k, checked_search
from kb_core.storage.answers import save_answer
from kb_core.storage.regions import noted_low_confidence, with_regions
from kb_core.storage.store import now_iso
from kb_core.types import (
    NOT_ANSWERED,
    Answer,
    AnswerCitation,
    Chunk,
    ComputedAnswer,
    GenerateRequest,
    Hit,
    ModelRef,
    PackedChunk,
    RefusalReason,
    RenderedPrompt,
    RetrievalSummary,
    SearchQuery,
    TokenUsage,
)

if TYPE_CHECKING:
    from kb_core.app import KnowledgeBase

log = logging.getLogger(__name__)

#: How many nearest candidates a refusal lists.
CANDIDATES_SHOWN = 3


class RagPipeline:
    """The answer pipeline over injected parts: a retrieval function, a language model, a store.

    ``language_model`` and ``embedding_ref`` are called only when needed, so a refusal by the
    gate never loads a model.
    """

    def __init__(
        self,
        config: Config,
        store: RecordStore,
        retrieve: Callable[[SearchQuery], Sequence[Hit]],
        language_model: Callable[[], LanguageModel],
        embedding_ref: Callable[[], ModelRef | None] = lambda: None,
        check_backend: Callable[[], object] = lambda: None,
    ) -> None:
        self.config = config
        self.check_backend = check_backend  # raises when the backend is not installed (before any retrieval)
        self.store = store
        self.retrieve = retrieve
        self.language_model = language_model
        self.embedding_ref = embedding_ref

    def ask(
        self,
        question: CheckedText,
        options: AskOptions = AskOptions(),
        on_token: TokenCallback | None = None,
        history: str = "",
        *,
        save: bool = True,
    ) -> Answer:
        """Answer ``question`` from the knowledge base, or refuse; the answer is saved unless ``save`` is False.

        ``question`` arrives checked where it came in (:func:`ask`, :func:`kb_core.ask_in_thread`).
        ``history``: the turns before a follow-up, shown to the model before the question (never evidence).
        ``save=False`` leaves keeping it to the caller (a thread's turn is saved with its answer, at once).
        """
        run = self._start(question, options, history)
        run.hits = self._retrieve(run)
        answer = self._gate(run)
        if answer is None:
            llm = self.language_model()
            with inside_model(llm.model_ref):  # a native crash is reported by the next run
                answer = self._generate(run, llm, on_token)
        if save:
            with self.store.transaction():  # the answer, its citations and the person asking (its owner), together
                save_answer(self.store, answer, asking_person())
        return answer

    # -- stages ---------------------------------------------------------------------------------

    def _start(self, question: CheckedText, options: AskOptions, history: str) -> QuestionRun:
        mode = options.mode or self.config.search.mode
        check_mode_and_k(mode, options.k)
        k = max(options.k or 0, self.config.search.default_k)
        check_k(k)  # [search] default_k too: retrieval takes the query as checked (its text where it came in)
        if self.config.rag.unsupported_claims not in UNSUPPORTED_POLICIES:
            raise KbError(
                f"unknown [rag] unsupported_claims {self.config.rag.unsupported_claims!r}",
                hint=f"use one of: {', '.join(UNSUPPORTED_POLICIES)}",
            )
        self.check_backend()  # a typo in the backend's name fails before retrieval, after the input checks
        kind = kind_of(question)
        version = options.template_version or self.config.rag.prompt_template_version
        prompt = question_prompt(version, kind, question, history)
        trace_id = f"ret_{secrets.token_hex(4)}"
        computes = self.config.rag.computations and kind.script == "latin" and asks_for_computation(question)
        k = max(k, COMPUTATION_CANDIDATES) if computes else k  # its passages are chosen by their rows (by_evidence_fit)
        return QuestionRun(question, options, prompt, mode, k, time.perf_counter(), trace_id, kind, computes)

    def _retrieve(self, run: QuestionRun) -> list[Hit]:
        began = time.perf_counter()
        hits: list[Hit] = []
        seen: set[str] = set()
        for hit in self.retrieve(SearchQuery(text=run.question, k=run.k, mode=run.mode)):
            if hit.chunk_id not in seen:
                seen.add(hit.chunk_id)
                hits.append(hit)
        run.retrieval_ms = elapsed_ms(began)
        return hits

    def _gate(self, run: QuestionRun) -> Answer | None:
        """A refusal when retrieval found nothing or its best hit scores below the gate."""
        gate = self.config.rag.gate(run.mode)
        if not run.hits:
            return self._refusal(run, "no_chunks", run.template.no_chunks_refusal, "retrieval found no chunks")
        top = run.hits[0].score
        if top >= gate:
            return None
        lines = [run.template.gate_refusal.format(gate=f"{gate:.2f}")]
        lines += [
            run.template.candidate_line.format(ref=h.citation, score=f"{h.score:.2f}")
            for h in run.hits[:CANDIDATES_SHOWN]
        ]
        return self._refusal(
            run, "score_gate", "\n".join(lines), f"the best hit scores {top:.2f}, below the gate {gate:.2f}"
        )

    def _generate(self, run: QuestionRun, llm: LanguageModel, on_token: TokenCallback | None) -> Answer:
        rag = self.config.rag
        candidates = self.store.get_chunks([h.chunk_id for h in run.hits]) if run.computed else {}
        ordinary = select(run.hits, rag.max_chunks, rag.min_relative_score, whole_document=run.kind.yes_no)
        over_tables = any(holds_table(chunk.text) for chunk in candidates.values())  # a computation over tables
        chosen = by_evidence_fit(run.hits, candidates, run.question, rag.max_chunks) if over_tables else ordinary
        counted = run.computed and counts_rows(run.question) and threshold_of(run.question) is None  # rows counted
        whole = run.kind.lists or counted  # every row, not a retrieved share (a count of years reads one row)
        document = self.store.chunks_of([chosen[0].doc_path]) if whole else []
        chosen = with_whole_document(chosen, document, run.hits)
        run.hits += [hit for hit in chosen if hit.retriever == WHOLE]  # cited like the retrieved ones
        limits = (self.config.models.llm.max_tokens, rag.max_context_tokens)
        evidence = packed_evidence(self.store, llm, run, chosen, candidates, limits)
        if evidence is None:
            log.warning("every retrieved chunk disappeared from the store before packing")
            return self._refusal(
                run,
                "no_chunks",
                run.template.no_chunks_refusal,
                "the retrieved chunks no longer exist (re-run kb ingest)",
            )
        constrained = rag.constrained if run.options.constrained is None else run.options.constrained
        items, entries, packed_chunks = evidence.items, evidence.entries, evidence.chunks
        unread = len({c.chunk_id for c in document} - {item.chunk_id for item in items})
        computing = run.computed and any(holds_table(chunk.text) for chunk in packed_chunks.values())
        not_worked_out: Answer | None = None  # a computation kb refused: the ordinary answer must state the number
        if computing:
            packed_ids = {item.chunk_id for item in items}  # retrieval's others, already read with the candidates
            beside = [(h, candidates[h.chunk_id]) for h in ordinary if h.chunk_id in candidates.keys() - packed_ids]
            worked_out = self._compute(run, llm, evidence, on_token, unread, beside)
            if worked_out is not None and (worked_out.grounded or unread):
                return worked_out
            not_worked_out = worked_out
            if over_tables and not whole:  # answered in words: from the passages any question reads
                evidence = packed_evidence(self.store, llm, run, ordinary, candidates, limits) or evidence
                items, entries, packed_chunks = evidence.items, evidence.entries, evidence.chunks
        # Instructions hidden in a passage are not evidence: claims are checked against the rest.
        passages = {m: without_instructions(chunk.text) for m, chunk in packed_chunks.items()}
        if computing and not can_be_stated(run.question, passages):  # no answer in words could be kept
            return not_worked_out or self._refusal(run, "computation", computed.REFUSAL, NOT_STATABLE, "not_stated")
        prompt, request = self._request(run, entries, constrained)
        sources = [CitableSource(m, chunk.doc_path, chunk.heading_path) for m, chunk in packed_chunks.items()]
        asked = check_first(llm, run.prompt, entries, rag.answer_check)  # before the model writes: no text shown yet
        strict = lambda text: validate(text, run.question, passages, sources, yes_no=run.kind.yes_no)  # noqa: E731
        withdrawn_early = asked[0] is not None and asked[0] < rag.answer_check
        held = run.kind.yes_no or withdrawn_early or computing  # computing: the number's check comes at the end
        release = CheckedRelease(on_token, strict, hold=held)  # only checked text is shown
        raw, done, first_token_ms, generation_ms = stream_answer(llm, request, release.feed, run.started)
        if done.finish_reason == "error":
            verdict = Verdict(
                grounded=False,
                refusal_reason="generation_error",
                note=f"generation failed: {done.error or 'unknown error'}",
                text=raw,
                refusal_detail="generation_error",
            )
        else:
            verdict = validate(raw, run.question, passages, sources, rag.unsupported_claims, yes_no=run.kind.yes_no)
        verdict, check, check_ms = answer_check(llm, run.prompt, entries, verdict, rag.answer_check, asked)
        verdict = release.settle(verdict)  # text shown is never withdrawn: the answer is then what was shown
        if not verdict.grounded and verdict.refusal_detail != NOT_ANSWERED:  # the model's text is no answer's
            verdict = attrs.evolve(verdict, text=run.template.unchecked_refusal)  # (its sentences keep it)
        if computing and not (verdict.grounded and stated_answer(verdict.text, run.question, passages)):
            if not_worked_out is not None:  # neither way answered: the computation's refusal says more
                return not_worked_out
            if verdict.grounded:
                return self._refusal(run, "computation", computed.REFUSAL, NOT_STATED, "not_stated")
        if unread and verdict.grounded:  # a list read from part of its document: said, not hidden
            verdict = attrs.evolve(verdict, note=unread_note(items[0].ref, unread))
        withdrawn = verdict.refusal_detail == NOT_ANSWERED  # its candidates: the passages it cited
        citations = self._citations(run, items, verdict.cited if verdict.grounded or withdrawn else ())
        usage = TokenUsage(
            prompt_tokens=done.prompt_tokens,
            completion_tokens=done.completion_tokens,
            latency_ms=elapsed_ms(run.started),
            first_token_ms=first_token_ms,
            generation_ms=generation_ms,
            cached_prompt_tokens=done.cached_tokens,
            check_ms=check_ms,
        )
        verdict_word = verdict_of(verdict.text) if run.kind.yes_no else None
        opening = verdict_word if run.kind.wants_verdict else None  # a choice question states no verdict
        stated = state_verdict(verdict, opening, done.verdict_no_share, passages, rag, run.template)
        verdict, confidence, held = stated
        ignored = tuple(m for m, chunk in packed_chunks.items() if passages[m] != chunk.text)
        answer = self._answer(
            run,
            verdict.text or raw,
            verdict,
            citations,
            usage,
            model=llm.model_ref,
            constrained=constrained,
            finish_reason=done.finish_reason,
            packed=tuple(items),
            prompt=prompt,
            verdict_word=verdict_word,
            verdict_confidence=confidence,
            verdict_withheld=held,
            check=check,
            ignored=ignored,
            candidates=citations if withdrawn else None,
        )
        release.finish(answer.answer, answer.grounded)  # the rest of a grounded answer; a refusal shows nothing
        return answer

    def _compute(
        self,
        run: QuestionRun,
        llm: LanguageModel,
        evidence: Evidence,
        on_token: TokenCallback | None,
        unread: int = 0,
        beside: Sequence[tuple[Hit, Chunk]] = (),
    ) -> Answer | None:
        """The answer kb works out from the computation the model writes over the packed ``evidence`` (entries,
        items, chunks by marker), or its refusal; None when the model writes none (the question then takes the
        ordinary path). Only the checked answer reaches ``on_token``. A count over a document ``unread`` passages of
        which did not fit is refused: it would count a share. ``beside``: retrieved hits (with their chunks) not given
        to the model that kb reads for the report's own statement of the result (cited when one states it)."""
        items, chunks = evidence.items, evidence.chunks
        llm_cfg, options = self.config.models.llm, run.options
        if unread:
            note = unread_note(items[0].ref, unread)
            return self._refusal(run, "computation", computed.REFUSAL, note, detail="rows_unread")
        extra = read_beside(run, beside, first_marker=len(items) + 1)
        worked = computed.work_out(
            llm,
            evidence.entries,
            run.question,
            {m: without_instructions(chunk.text) for m, chunk in chunks.items()},
            {m: chunk.doc_path for m, chunk in (chunks | {m: c for m, (_, c) in extra.items()}).items()},
            temperature=llm_cfg.temperature if options.temperature is None else options.temperature,
            seed=llm_cfg.seed if options.seed is None else options.seed,
            started=run.started,
            beside={m: without_instructions(chunk.text) for m, (_, chunk) in extra.items()},
        )
        if worked is None:
            return None
        items = items + [item for m, (item, _) in extra.items() if m in worked.verdict.cited]
        answer = self._answer(
            run,
            worked.verdict.text,
            worked.verdict,
            self._citations(run, items, worked.verdict.cited),
            worked.usage,
            model=llm.model_ref,
            finish_reason=worked.finish_reason,
            packed=tuple(items),
            prompt=worked.prompt,
            computation=worked.record,
        )
        computed.show(answer, on_token)
        return answer

    def _citations(
        self, run: QuestionRun, items: Sequence[PackedChunk], markers: Sequence[int]
    ) -> tuple[AnswerCitation, ...]:
        """The citations of ``markers`` (packed passages), with their regions on a page where they have one."""
        hit_of = {h.chunk_id: h for h in run.hits}
        by_marker = {item.marker: item for item in items}
        cited = tuple(citation_of(hit_of[by_marker[m].chunk_id], m) for m in markers)
        return with_regions(cited, self.store.get_document)

    def _request(
        self, run: QuestionRun, entries: list[str], constrained: bool
    ) -> tuple[RenderedPrompt, GenerateRequest]:
        """The rendered prompt (kept for --explain) and the request the model is sent."""
        prompt = RenderedPrompt(
            system=run.template.system,
            user=run.prompt.user("\n\n".join(entries)),
            grammar=citation_grammar(len(entries)) if constrained else None,
        )
        llm_cfg = self.config.models.llm
        request = GenerateRequest(
            system=prompt.system,
            user=prompt.user,
            stop=run.template.stop,
            max_tokens=llm_cfg.max_tokens,
            temperature=llm_cfg.temperature if run.options.temperature is None else run.options.temperature,
            seed=llm_cfg.seed if run.options.seed is None else run.options.seed,
            grammar=prompt.grammar,
            examples=run.template.examples,
            verdict=verdict_opening(run.template, run.kind, self.config.rag.verdict_no_share),
        )
        return prompt, request

    # -- building and keeping answers -------------------------------------------------------------

    def _refusal(
        self, run: QuestionRun, reason: RefusalReason, text: str, note: str, detail: str | None = None
    ) -> Answer:
        verdict = Verdict(grounded=False, refusal_reason=reason, note=note, text=text, refusal_detail=detail or reason)
        return self._answer(run, text, verdict, (), TokenUsage(latency_ms=elapsed_ms(run.started)))

    def _answer(
        self,
        run: QuestionRun,
        text: str,
        verdict: Verdict,
        citations: tuple[AnswerCitation, ...],
        usage: TokenUsage,
        *,
        model: ModelRef | None = None,
        constrained: bool = False,
        finish_reason: str | None = None,
        packed: tuple[PackedChunk, ...] = (),
        prompt: RenderedPrompt | None = None,
        verdict_word: str | None = None,
        verdict_confidence: float | None = None,
        verdict_withheld: bool = False,
        check: float | None = None,
        ignored: tuple[int, ...] = (),
        candidates: tuple[AnswerCitation, ...] | None = None,
        computation: ComputedAnswer | None = None,
    ) -> Answer:
        explain = run.options.explain
        if candidates is None:
            candidates = () if verdict.grounded else tuple(citation_of(h, None) for h in run.hits[:CANDIDATES_SHOWN])
        retrieval = RetrievalSummary(
            trace_id=run.trace_id,
            mode=run.mode,
            k=run.k,
            score_gate=self.config.rag.gate(run.mode),
            top_score=round(run.hits[0].score, 4) if run.hits else None,
            chunks_returned=len(run.hits),
            chunks_used=len(packed),
            took_ms=run.retrieval_ms,
        )
        return Answer(
            answer_id=f"ans_{uuid.uuid4().hex[:16]}",
            question=run.question,
            answer=text,
            grounded=verdict.grounded,
            refusal_reason=verdict.refusal_reason,
            note=noted_low_confidence(verdict.note, citations if verdict.grounded else ()),
            refusal_detail=verdict.refusal_detail,
            sentences=verdict.sentences,
            verdict=verdict_word,
            verdict_confidence=verdict_confidence,
            verdict_withheld=verdict_withheld,
            answer_check=check,
            ignored_instructions=ignored,
            computation=computation,
            citations=citations if verdict.grounded else (),
            candidates=candidates,
            invalid_markers=verdict.invalid,
            model=model,
            embedding=self.embedding_ref() if run.mode in ("vector", "hybrid") else None,
            prompt_template_version=run.template.version,
            constrained=constrained,
            finish_reason=finish_reason,
            retrieval=retrieval,
            usage=usage,
            created_at=now_iso(),
            packed=packed if explain else (),
            prompt=prompt if explain else None,
            trace=tuple(run.hits) if explain else (),
        )


def ask(
    kb: KnowledgeBase,
    question: str,
    options: AskOptions = AskOptions(),
    on_token: TokenCallback | None = None,
    history: str = "",
    *,
    save: bool = True,
) -> Answer:
    """Answer ``question`` from the knowledge base ``kb`` (see :class:`RagPipeline`); saved unless ``save`` is False.

    The question is checked here, once (:func:`~kb_core.limits.check_text`): a mistake is one KbError line.
    """
    return kb_pipeline(kb, options.backend).ask(check_text(question, "question"), options, on_token, history, save=save)


def kb_pipeline(kb: KnowledgeBase, backend: str | None = None) -> RagPipeline:
    """The answer pipeline over ``kb``: its search, its store, the language model ``backend`` (None: configured)."""
    return RagPipeline(
        config=kb.config,
        store=kb.store,
        retrieve=lambda query: checked_search(kb, query).hits,
        language_model=lambda: kb.language_model(backend),
        embedding_ref=lambda: kb.embedder().model_ref,
        check_backend=lambda: kb.registry.language_model_factory(backend or kb.config.models.llm.backend),
    )
