"""Search across the enabled indexes: lexical, vector, or hybrid (reciprocal rank fusion).

Every hit's ``score`` is in [0, 1] in every mode, and the answer pipeline gates on the top
hit's score (``[rag] score_gate``). What the score means per mode:

``lexical``
    The lexical index's calibrated score, passed through. kb-tantivy: ``c**2 / (c**2 + 0.9**2)`` where
    ``c`` is the chunk's BM25 score over the query's *evidence mass* (the BM25 score of a chunk
    holding every query term once), so it says how much of the query's information a chunk holds,
    independently of the other hits. Matching only common words scores near 0.

``vector``
    The vector index's calibrated score, passed through. kb-sqlitevec: the cosine similarity of
    query and chunk, rescaled above the embedder's similarity floor for the query's script
    (measured per language: ``Embedder.similarity_floors``) and clipped to [0, 1], times the share
    of the query's words in scripts the embedder models (``Embedder.scripts``). The English-only
    default model (all-MiniLM-L6-v2) finds every Korean or Chinese text alike, so for a Korean or
    Chinese question its scores are 0: vector search refuses rather than answer from noise.

``hybrid``
    ``score = to_gate(rrf_norm * evidence, lead_gate, gate)``, over the ``n`` retrievers asked, each
    with a weight ``w_r`` in [0, 1] for this query:

    * ``w_r`` (:func:`retriever_weight`): how well the retriever's scores separate its hits, its best
      score minus its ``SEPARATION_RANK``-th best (0 when it returned fewer) over
      ``SEPARATION_FULL``, clamped to [0, 1]. A retriever whose evidence is uninformative for the
      query weighs 0: a vector index whose embedder does not model the query's script (all scores
      0), or one whose hits all look alike. When every weight is 0, all count 1.
    * ``rrf_norm = sum_r w_r / (rrf_k + rank_r) / sum_r w_r / (rrf_k + 1)``: weighted reciprocal
      rank fusion, normalised so that a chunk ranked first by every retriever that counts gets 1.0.
    * ``evidence = sum_r w_r * score_r / sum_r w_r``: the weighted mean calibrated score, 0 from a
      retriever that did not return the chunk. An off-topic question keeps low evidence however
      its chunks rank.
    * ``to_gate``: the piecewise-linear map of [0, 1] onto itself that sends ``lead_gate`` to the
      hybrid gate (``[rag] score_gates``). ``lead_gate`` (:func:`lead_gate`) is the hybrid gate when
      the retrievers count alike (the map is then the identity: most English questions) and the
      gate of the leading retriever's mode when it counts alone, linear in its share of the weight
      in between. So a Korean question under an English-only embedder gets its lexical score with
      the lexical gate (0.15) landing on the hybrid gate (0.30): the gate keeps its meaning.

    Every factor is in [0, 1], so the score is. Hits are ordered by it (within a query ``to_gate``
    is monotone: the order is that of ``rrf_norm * evidence``). A chunk found only by retrievers of
    weight 0 is dropped; with one of two retrievers at weight 0, hybrid ranks exactly as the other
    one. Raw weighted RRF is kept in ``Hit.raw_score``; per-retriever weights, ranks and scores are
    in ``SearchResponse.retrievers`` and ``explanations``.

When a lexical or vector search has several indexes of that mode, they are fused the same way
as hybrid. For fusion each retriever is asked for ``max(k, search.fanout)`` hits (a single
retriever for k) without snippets; hits are deduplicated by chunk, filtered by the path glob,
and numbered 1..k, and only then are the kept hits' snippets made (by the index that found
each, when it is a ``SnippetMaker``).

Grants: a search made under :func:`kb_core.retrieval.access.restricted_to` carries the person's read
prefixes into every retriever's query (``SearchQuery.path_prefixes``, narrowed with the query's own), and
each index applies them before ranking. A hit outside them is still dropped here, so an index that
ignores them can return fewer hits, never a passage the person may not read.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from kb_core.config import DEFAULT_GATES  # noqa: F401  (the per-mode gates, calibrated as described below)
from kb_core.extend.contracts import SnippetMaker
from kb_core.limits import check_k, check_mode, check_path_glob, check_text
from kb_core.retrieval.access import current_access, narrow_prefixes, under
from kb_core.retrieval.vectors import make_snippet
from kb_core.types import Hit, SearchQuery

if TYPE_CHECKING:
    from kb_core.app import KnowledgeBase

#: Fusion weights (see the module docstring): a retriever whose best score stands SEPARATION_FULL
#: above its SEPARATION_RANK-th best counts fully; less separation, proportionally less.
SEPARATION_RANK = 10
SEPARATION_FULL = 0.03


@attrs.frozen
class RetrieverRun:
    """What one retriever returned for a query (for ``kb search --explain``)."""

    name: str
    mode: str
    hits: int
    took_ms: float
    top_scores: tuple[float, ...] = ()
    top_raw_scores: tuple[float, ...] = ()
    weight: float = 1.0


@attrs.frozen
class Contribution:
    """One retriever's part in a fused hit: its rank and calibrated score for that chunk."""

    retriever: str
    rank: int
    score: float
    raw_score: float
    weight: float = 1.0


@attrs.frozen
class HitExplanation:
    """Why a hit scored what it did: the per-retriever ranks, the RRF value and the evidence."""

    chunk_id: str
    rrf: float
    rrf_norm: float
    evidence: float
    contributions: tuple[Contribution, ...] = ()
    gate_from: float | None = None
    gate_to: float | None = None


@attrs.frozen
class SearchResponse:
    """The result of :func:`search`: hits ranked 1..k with scores in [0, 1], and how they came about."""

    query: str
    mode: str
    k: int
    hits: tuple[Hit, ...]
    took_ms: float
    retrievers: tuple[RetrieverRun, ...] = ()
    explanations: tuple[HitExplanation, ...] = ()
    rrf_k: int = 60
    path_glob: str | None = None


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, float(value)))


def _run_retriever(retriever: Any, query: SearchQuery) -> tuple[list[Hit], RetrieverRun]:
    """Search one retriever, keep the first hit of each chunk (and of the path glob and prefixes), and time it."""
    start = time.perf_counter()
    hits = retriever.search(query)
    took = (time.perf_counter() - start) * 1000
    seen: set[str] = set()
    kept: list[Hit] = []
    prefixes = query.path_prefixes
    for hit in hits:
        if hit.chunk_id in seen or (query.path_glob and not fnmatch.fnmatchcase(hit.doc_path, query.path_glob)):
            continue
        if prefixes is not None and not under(hit.doc_path, prefixes):
            continue  # an index that ignored the grants: the passage is never seen
        seen.add(hit.chunk_id)
        kept.append(hit)
    run = RetrieverRun(
        name=retriever.name,
        mode=retriever.mode,
        hits=len(kept),
        took_ms=round(took, 3),
        top_scores=tuple(round(_clamp(h.score), 4) for h in kept[:5]),
        top_raw_scores=tuple(round(float(h.raw_score), 4) for h in kept[:5]),
    )
    return kept, run


def retriever_weight(scores: Sequence[float]) -> float:
    """How informative one retriever's evidence is for this query, in [0, 1] (see the module docstring).

    The separation of its hits: its best score minus its ``SEPARATION_RANK``-th best (0 when it
    returned fewer), over ``SEPARATION_FULL``. Scores that are all 0 (an embedder that does not
    model the query's script) or all alike (every hit equally near) give 0.
    """
    if not scores:
        return 0.0
    ranked = sorted((_clamp(s) for s in scores), reverse=True)
    tail = ranked[SEPARATION_RANK - 1] if len(ranked) >= SEPARATION_RANK else 0.0
    return round(_clamp((ranked[0] - tail) / SEPARATION_FULL), 6)  # no vanishing (denormal) weights


def fusion_weights(results: Sequence[tuple[str, Sequence[Hit]]]) -> dict[str, float]:
    """Each retriever's :func:`retriever_weight`; all 1.0 when every one is 0 (nothing to prefer)."""
    weights = {name: retriever_weight([h.score for h in hits]) for name, hits in results}
    return weights if any(weights.values()) else dict.fromkeys(weights, 1.0)


def lead_gate(weights: Mapping[str, float], gates: Mapping[str, float], fused_gate: float) -> float:
    """The gate that ``rrf_norm * evidence`` faces under these weights (see the module docstring).

    The fused mode's gate when the retrievers count alike, the gate of the leading retriever's mode
    when it counts alone, linear in the leading retriever's share of the weight in between.
    """
    total = sum(weights.values())
    if len(weights) < 2 or total <= 0:
        return fused_gate
    lead = max(weights, key=lambda name: weights[name])
    even = 1 / len(weights)
    t = _clamp((weights[lead] / total - even) / (1 - even))
    return (1 - t) * fused_gate + t * gates.get(lead, fused_gate)


def to_gate(value: float, source: float, target: float) -> float:
    """Map ``value`` in [0, 1] piecewise linearly so that ``source`` lands on ``target`` (0 and 1 stay)."""
    if not 0.0 < source < 1.0 or not 0.0 < target < 1.0 or source == target:
        return _clamp(value)
    if value <= source:
        return _clamp(value * target / source)
    return _clamp(target + (value - source) * (1 - target) / (1 - source))


def fuse(
    results: Sequence[tuple[str, Sequence[Hit]]],
    rrf_k: int,
    weights: Mapping[str, float] | None = None,
    gates: Mapping[str, float] | None = None,
    fused_gate: float | None = None,
) -> list[tuple[Hit, HitExplanation]]:
    """Fuse ranked lists (``(retriever name, hits)``) into hits ordered by ``rrf_norm * evidence``.

    Each retriever counts with its weight (default: :func:`fusion_weights`). With ``gates`` (each
    retriever's mode gate) and ``fused_gate``, the value is mapped from :func:`lead_gate` to
    ``fused_gate`` (:func:`to_gate`; identity when the retrievers count alike). The returned hits
    are unnumbered (rank 0); ties break on raw RRF, then chunk id.
    """
    weights = dict(weights) if weights is not None else fusion_weights(results)
    total = sum(weights.values()) or 1.0
    best_rrf = total / (rrf_k + 1)
    source = lead_gate(weights, gates, fused_gate) if gates is not None and fused_gate is not None else None
    rescale = source is not None and fused_gate is not None and abs(source - fused_gate) > 1e-12
    first: dict[str, Hit] = {}
    parts: dict[str, list[Contribution]] = {}
    for name, hits in results:
        weight, seen = weights[name], set()
        for rank, hit in enumerate(hits, start=1):
            if hit.chunk_id in seen:
                continue  # a chunk counts once per list, at its best rank
            seen.add(hit.chunk_id)
            first.setdefault(hit.chunk_id, hit)
            contribution = Contribution(name, rank, _clamp(hit.score), float(hit.raw_score), weight)
            parts.setdefault(hit.chunk_id, []).append(contribution)
    fused: list[tuple[Hit, HitExplanation]] = []
    for chunk_id, contributions in parts.items():
        rrf = sum(c.weight / (rrf_k + c.rank) for c in contributions)
        if rrf <= 0.0:
            continue  # found only by retrievers whose evidence does not count for this query
        rrf_norm = _clamp(rrf / best_rrf)
        evidence = _clamp(sum(c.weight * c.score for c in contributions) / total)
        score = rrf_norm * evidence
        if rescale:
            score = to_gate(score, source, fused_gate)  # type: ignore[arg-type]
        hit = first[chunk_id]
        fused_hit = attrs.evolve(
            hit, score=score, rank=0, retriever="+".join(c.retriever for c in contributions), raw_score=rrf
        )
        explanation = HitExplanation(
            chunk_id, rrf, rrf_norm, evidence, tuple(contributions), source, fused_gate if source is not None else None
        )
        fused.append((fused_hit, explanation))
    fused.sort(key=lambda pair: (-pair[0].score, -pair[1].rrf, pair[0].chunk_id))
    return fused


def _passthrough(name: str, hits: Sequence[Hit]) -> list[tuple[Hit, HitExplanation]]:
    """A single retriever's hits with their scores clamped to [0, 1] (no fusion)."""
    out = []
    for rank, hit in enumerate(hits, start=1):
        score = _clamp(hit.score)
        explanation = HitExplanation(hit.chunk_id, 0.0, 0.0, score, (Contribution(name, rank, score, hit.raw_score),))
        out.append((attrs.evolve(hit, score=score, retriever=hit.retriever or name), explanation))
    return out


def _fill_from_store(kb: KnowledgeBase, hits: list[Hit], query: SearchQuery, finders: Sequence[Any]) -> list[Hit]:
    """Give hits without a snippet or heading path the ones of their chunk in the store of record.

    ``finders[i]`` is the retriever whose hit ``hits[i]`` is; a missing snippet comes from it when
    it is a :class:`SnippetMaker`, else it is the chunk's opening (:func:`~kb_core.retrieval.vectors.make_snippet`).
    """
    missing = [h.chunk_id for h in hits if not h.snippet or not h.heading_path]
    if not missing:
        return hits
    chunks = kb.store.get_chunks(missing)
    filled = []
    for hit, finder in zip(hits, finders, strict=True):
        chunk = chunks.get(hit.chunk_id)
        if chunk is not None:
            hit = attrs.evolve(
                hit,
                snippet=hit.snippet or _snippet(finder, query, chunk.text),
                heading_path=hit.heading_path or chunk.heading_path,
            )
        filled.append(hit)
    return filled


def _snippet(retriever: Any, query: SearchQuery, text: str) -> str:
    return retriever.snippet(query, text) if isinstance(retriever, SnippetMaker) else make_snippet(text)


def check_mode_and_k(mode: str, k: int | None) -> None:
    """Raise a one-line KbError for a search mode kb does not know or a ``k`` out of bounds (None: not given)."""
    check_mode(mode)
    check_k(k)


def search(kb: KnowledgeBase, query: SearchQuery) -> SearchResponse:
    """Search the knowledge base in ``query.mode``; hits are ranked 1..k with scores in [0, 1].

    The query is checked first (:mod:`kb_core.limits`): a mistake is one KbError line.
    """
    check_mode_and_k(query.mode, query.k)
    check_text(query.text, "query")
    check_path_glob(query.path_glob)
    return checked_search(kb, query)


def checked_search(kb: KnowledgeBase, query: SearchQuery) -> SearchResponse:
    """:func:`search` for a query its caller has already checked (the answer pipeline checks its question once)."""
    from kb_core.ingest.follow import catch_up  # (here: importing this module stays light)

    start = time.perf_counter()
    access = current_access()
    if access is not None:  # the asker's grants, inside every index's query (a grant of "" is every path: None)
        prefixes = narrow_prefixes(query.path_prefixes, access.readable)
        query = attrs.evolve(query, path_prefixes=None if prefixes is not None and "" in prefixes else prefixes)
    catch_up(kb)  # a shared store (PostgreSQL): this folder's indexes first apply what other processes wrote
    cfg = kb.config.search
    retrievers = kb.retrievers(query.mode)
    fused = len(retrievers) > 1 or query.mode == "hybrid"
    fetch = attrs.evolve(query, k=max(query.k, cfg.fanout), snippets=False) if fused else query
    results: list[tuple[str, list[Hit]]] = []
    runs: list[RetrieverRun] = []
    for retriever in retrievers:
        hits, run = _run_retriever(retriever, fetch)
        results.append((retriever.name, hits))
        runs.append(run)
    if fused:
        weights = fusion_weights(results)
        runs = [attrs.evolve(run, weight=round(weights[run.name], 4)) for run in runs]
        gates = {r.name: kb.config.rag.gate(r.mode) for r in retrievers}
        ranked = fuse(results, cfg.rrf_k, weights, gates, kb.config.rag.gate(query.mode))
    else:
        ranked = _passthrough(*results[0])
    ranked = ranked[: query.k]
    hits = [attrs.evolve(hit, rank=rank) for rank, (hit, _) in enumerate(ranked, start=1)]
    by_name = {r.name: r for r in retrievers}
    finders = [by_name.get(explanation.contributions[0].retriever) for _, explanation in ranked]
    hits = _fill_from_store(kb, hits, query, finders)
    return SearchResponse(
        query=query.text,
        mode=query.mode,
        k=query.k,
        hits=tuple(hits),
        took_ms=round((time.perf_counter() - start) * 1000, 3),
        retrievers=tuple(runs),
        explanations=tuple(explanation for _, explanation in ranked),
        rrf_k=cfg.rrf_k,
        path_glob=query.path_glob,
    )
