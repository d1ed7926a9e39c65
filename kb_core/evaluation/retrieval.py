"""Retrieval evaluation on BEIR-format data: nDCG@10, Recall@10 and MRR@10, as trec_eval computes them.

* Queries: JSONL, one ``{"id" (or "_id"), "text"}`` per line. Qrels: TSV ``query-id, doc-id,
  score`` (a header line is allowed); a score >= 1 means relevant, and is the gain for nDCG.
* A document's id is the file stem of its path in the knowledge base (``docs/31715818.md`` is
  ``31715818``). Chunk hits collapse to their document at its best rank.
* nDCG@k is trec_eval's ``ndcg_cut.k`` (linear gain, log2 discount, ideal from the qrels);
  Recall@k is ``recall.k``; MRR@k is the reciprocal rank of the first relevant document within
  the top k. A query with no results scores 0; averages run over every query that has both a
  text and at least one relevant judgement (as BEIR does).
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import attrs

from kb_core.errors import KbError
from kb_core.evaluation.stats import percentile
from kb_core.storage.answers import save_eval_run
from kb_core.storage.store import now_iso
from kb_core.types import Progress, SearchQuery

if TYPE_CHECKING:
    from kb_core.app import KnowledgeBase

Qrels = dict[str, dict[str, int]]

#: How many chunk hits to fetch per query before collapsing them to documents.
CHUNK_DEPTH = 50


@attrs.frozen
class ModeReport:
    """The metrics of one search mode, averaged over the evaluated queries."""

    mode: str
    ndcg_at_k: float
    recall_at_k: float
    mrr_at_k: float
    queries: int
    queries_without_results: int
    total_s: float
    latency_ms_p50: float
    latency_ms_p95: float
    run_file: str = ""


@attrs.frozen
class RetrievalReport:
    """What ``kb eval retrieval`` measured (``retrieval_report.v1``)."""

    run_id: str
    created_at: str
    k: int
    queries_file: str
    qrels_file: str
    num_queries: int
    modes: tuple[ModeReport, ...]
    settings: dict[str, object] = attrs.field(factory=dict)


# -- loading ---------------------------------------------------------------------------------


def load_queries(path: Path) -> dict[str, str]:
    """query id -> text, from a BEIR ``queries.jsonl``."""
    queries: dict[str, str] = {}
    try:
        lines = (
            Path(path).read_text(encoding="utf-8").split("\n")
        )  # not splitlines(): U+2028 may sit inside a JSON string
    except OSError as exc:
        raise KbError(f"cannot read queries file {path}: {exc.strerror}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            qid = str(record.get("id", record.get("_id")))
            text = str(record["text"])
        except (json.JSONDecodeError, KeyError, AttributeError):
            raise KbError(f"{path}:{number}: expected a JSON object with 'id' and 'text'") from None
        queries[qid] = text
    return queries


def load_qrels(path: Path) -> Qrels:
    """query id -> {doc id: relevance}, from a BEIR ``qrels.tsv`` (header optional)."""
    qrels: Qrels = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise KbError(f"cannot read qrels file {path}: {exc.strerror}") from None
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields or (number == 1 and not fields[-1].lstrip("-").isdigit()):
            continue
        if len(fields) == 4:  # TREC qrels: qid 0 docid rel
            fields = [fields[0], fields[2], fields[3]]
        try:
            qid, doc_id, rel = fields[0], fields[1], int(fields[2])
        except (IndexError, ValueError):
            raise KbError(f"{path}:{number}: expected 'query-id<TAB>doc-id<TAB>score'") from None
        qrels.setdefault(qid, {})[doc_id] = rel
    return qrels


# -- metrics ---------------------------------------------------------------------------------


def ndcg_at_k(ranking: Sequence[str], judgements: Mapping[str, int], k: int = 10) -> float:
    """trec_eval ``ndcg_cut.k``: linear gain, log2(rank + 1) discount, ideal from the judgements."""
    dcg = sum(max(judgements.get(doc, 0), 0) / math.log2(i + 2) for i, doc in enumerate(ranking[:k]))
    ideal_gains = sorted((g for g in judgements.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal_gains))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranking: Sequence[str], judgements: Mapping[str, int], k: int = 10) -> float:
    """trec_eval ``recall.k``: relevant documents in the top k over all relevant documents."""
    relevant = {doc for doc, g in judgements.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mrr_at_k(ranking: Sequence[str], judgements: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document within the top k (0 when there is none)."""
    for i, doc in enumerate(ranking[:k]):
        if judgements.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def doc_id_of(path: str) -> str:
    """The BEIR document id of a knowledge-base path: its file stem."""
    return PurePosixPath(path).stem


def collapse_to_documents(doc_paths: Iterable[str]) -> list[str]:
    """Document ids in order of their best-ranked chunk, each once."""
    seen: dict[str, None] = {}
    for path in doc_paths:
        seen.setdefault(doc_id_of(path), None)
    return list(seen)


# -- running -----------------------------------------------------------------------------------


def evaluable_queries(queries: Mapping[str, str], qrels: Qrels) -> list[str]:
    """Ids of the queries that have a text and at least one relevant judgement, in file order."""
    return [qid for qid in queries if any(g > 0 for g in qrels.get(qid, {}).values())]


def run_mode(
    kb: KnowledgeBase,
    mode: str,
    queries: Mapping[str, str],
    qids: Sequence[str],
    k: int,
    progress: Progress | None = None,
) -> tuple[dict[str, list[tuple[str, float]]], list[float]]:
    """Search every query in one mode: qid -> [(doc id, score)] (top k documents), and latencies in ms."""
    from kb_core.retrieval.search import search

    depth = max(k, CHUNK_DEPTH)
    runs: dict[str, list[tuple[str, float]]] = {}
    latencies: list[float] = []
    for done, qid in enumerate(qids, start=1):
        start = time.perf_counter()
        response = search(kb, SearchQuery(text=queries[qid], k=depth, mode=mode))
        latencies.append((time.perf_counter() - start) * 1000)
        best: dict[str, float] = {}
        for hit in response.hits:
            best.setdefault(doc_id_of(hit.doc_path), hit.score)
        runs[qid] = list(best.items())[:k]
        if progress:
            progress(f"{mode} queries", done, len(qids))
    return runs, latencies


def write_trec_run(path: Path, runs: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> None:
    """Write a TREC run file: ``qid Q0 docid rank score tag``."""
    with Path(path).open("w", encoding="utf-8") as out:
        for qid, docs in runs.items():
            for rank, (doc_id, score) in enumerate(docs, start=1):
                out.write(f"{qid} Q0 {doc_id} {rank} {score:.6f} {tag}\n")


def score_mode(
    mode: str,
    runs: Mapping[str, Sequence[tuple[str, float]]],
    qrels: Qrels,
    qids: Sequence[str],
    k: int,
    latencies: Sequence[float],
    run_file: str = "",
) -> ModeReport:
    """Average the metrics of one mode's run over ``qids``."""
    rankings = {qid: [doc for doc, _ in runs.get(qid, [])] for qid in qids}
    n = len(qids) or 1

    def mean(metric: Callable[[Sequence[str], Mapping[str, int], int], float]) -> float:
        return sum(metric(rankings[q], qrels.get(q, {}), k) for q in qids) / n

    return ModeReport(
        mode=mode,
        ndcg_at_k=round(mean(ndcg_at_k), 5),
        recall_at_k=round(mean(recall_at_k), 5),
        mrr_at_k=round(mean(mrr_at_k), 5),
        queries=len(qids),
        queries_without_results=sum(1 for q in qids if not rankings[q]),
        total_s=round(sum(latencies) / 1000, 3),
        latency_ms_p50=round(percentile(latencies, 0.5), 2),
        latency_ms_p95=round(percentile(latencies, 0.95), 2),
        run_file=run_file,
    )


def evaluate_retrieval(
    kb: KnowledgeBase,
    queries_file: Path,
    qrels_file: Path,
    modes: Sequence[str],
    k: int = 10,
    out_dir: Path | None = None,
    progress: Progress | None = None,
) -> RetrievalReport:
    """Evaluate every mode on a BEIR query set, write run files and ``report.json``, record the run."""
    queries = load_queries(queries_file)
    qrels = load_qrels(qrels_file)
    qids = evaluable_queries(queries, qrels)
    if not qids:
        raise KbError(
            "no query has both a text and a relevant judgement", hint="check that the qrels match the queries"
        )
    run_id = uuid.uuid4().hex[:12]
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    reports = []
    for mode in modes:
        runs, latencies = run_mode(kb, mode, queries, qids, k, progress)
        run_file = ""
        if out_dir is not None:
            run_path = out_dir / f"run.{mode}.trec"
            write_trec_run(run_path, runs, f"kb-{mode}")
            run_file = str(run_path)
        reports.append(score_mode(mode, runs, qrels, qids, k, latencies, run_file))
    cfg = kb.config
    report = RetrievalReport(
        run_id=run_id,
        created_at=now_iso(),
        k=k,
        queries_file=str(queries_file),
        qrels_file=str(qrels_file),
        num_queries=len(qids),
        modes=tuple(reports),
        settings={
            "rrf_k": cfg.search.rrf_k,
            "fanout": cfg.search.fanout,
            "indexes": list(cfg.indexes.enabled),
            "embedding": cfg.models.embedding.name,
            "chunk_depth": max(k, CHUNK_DEPTH),
        },
    )
    report_path = out_dir / "report.json" if out_dir is not None else None
    if report_path is not None:
        from kb_core.output import dumps

        report_path.write_text(dumps("retrieval_report.v1", report) + "\n", encoding="utf-8")
    record_run(kb, report, report_path)
    return report


def record_run(kb: KnowledgeBase, report: RetrievalReport, report_path: Path | None) -> None:
    """Store the run in the ``eval_runs`` table."""
    metrics = {m.mode: {"ndcg": m.ndcg_at_k, "recall": m.recall_at_k, "mrr": m.mrr_at_k} for m in report.modes}
    config = {"k": report.k, "queries_file": report.queries_file, "qrels_file": report.qrels_file, **report.settings}
    save_eval_run(
        kb.store,
        report.run_id,
        report.created_at,
        "retrieval",
        config,
        metrics,
        str(report_path) if report_path else None,
    )
