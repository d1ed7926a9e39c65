"""Retrieval metrics against hand-computed values and properties; BEIR loading; the report."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core.errors import KbError
from kb_core.evaluation.retrieval import (
    collapse_to_documents,
    doc_id_of,
    evaluable_queries,
    load_qrels,
    load_queries,
    mrr_at_k,
    ndcg_at_k,
    recall_at_k,
    score_mode,
    write_trec_run,
)
from kb_core.evaluation.stats import percentile


def test_ndcg_hand_computed_binary() -> None:
    # relevant docs a, b; ranking puts a at 2, b at 4.
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_k(["x", "a", "y", "b"], {"a": 1, "b": 1}, 10) == pytest.approx(dcg / idcg)


def test_ndcg_linear_gain_and_cutoff() -> None:
    judgements = {"a": 2, "b": 1, "z": 0}
    # b first, a second: (1/1 + 2/log2 3) / (2/1 + 1/log2 3)
    expected = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert ndcg_at_k(["b", "a"], judgements, 10) == pytest.approx(expected)
    # a relevant document past the cut-off earns nothing
    assert ndcg_at_k(["x", "y", "a"], {"a": 1}, 2) == 0.0


def test_recall_and_mrr_hand_computed() -> None:
    judgements = {"a": 1, "b": 1, "c": 1, "n": 0}
    ranking = ["n", "q", "b", "a"]
    assert recall_at_k(ranking, judgements, 10) == pytest.approx(2 / 3)
    assert recall_at_k(ranking, judgements, 3) == pytest.approx(1 / 3)
    assert mrr_at_k(ranking, judgements, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(ranking, judgements, 2) == 0.0


def test_query_without_results_scores_zero() -> None:
    assert ndcg_at_k([], {"a": 1}) == recall_at_k([], {"a": 1}) == mrr_at_k([], {"a": 1}) == 0.0


rankings = st.lists(st.sampled_from([f"d{i}" for i in range(30)]), max_size=20, unique=True)
judgement_maps = st.dictionaries(st.sampled_from([f"d{i}" for i in range(30)]), st.integers(0, 3), min_size=1)


@given(rankings, judgement_maps, st.integers(1, 15))
def test_metrics_are_in_unit_interval(ranking: list[str], judgements: dict[str, int], k: int) -> None:
    for metric in (ndcg_at_k, recall_at_k, mrr_at_k):
        assert 0.0 <= metric(ranking, judgements, k) <= 1.0 + 1e-12


@given(judgement_maps, st.lists(st.sampled_from([f"n{i}" for i in range(5)]), max_size=5, unique=True))
def test_perfect_ranking_scores_one(judgements: dict[str, int], tail: list[str]) -> None:
    relevant = sorted((d for d, g in judgements.items() if g > 0), key=lambda d: -judgements[d])
    if not relevant:
        return
    ranking = relevant + tail
    k = max(10, len(relevant))
    assert ndcg_at_k(ranking, judgements, k) == pytest.approx(1.0)
    assert recall_at_k(ranking, judgements, k) == pytest.approx(1.0)
    assert mrr_at_k(ranking, judgements, k) == 1.0


@given(rankings, judgement_maps)
def test_moving_a_relevant_doc_up_never_lowers_ndcg(ranking: list[str], judgements: dict[str, int]) -> None:
    for i in range(1, len(ranking)):
        if judgements.get(ranking[i], 0) > judgements.get(ranking[i - 1], 0):
            swapped = ranking[: i - 1] + [ranking[i], ranking[i - 1]] + ranking[i + 1 :]
            assert ndcg_at_k(swapped, judgements) >= ndcg_at_k(ranking, judgements) - 1e-12


def test_collapse_keeps_best_rank_per_document() -> None:
    paths = ["docs/12.md", "docs/7.md", "docs/12.md", "other/7.md", "3.md"]
    assert collapse_to_documents(paths) == ["12", "7", "3"]
    assert doc_id_of("a/b/31715818.md") == "31715818"


def test_percentile_interpolates_between_ranks_as_every_report_does() -> None:
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.5) == 3.0
    assert percentile([float(i) for i in range(1, 101)], 0.95) == 95.05
    assert percentile([10.0, 20.0, 30.0, 40.0], 0.5) == 25.0
    assert percentile([], 0.5) == 0.0


def test_load_beir_files(tmp_path: Path) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "1", "text": "alpha"}\n\n{"_id": "2", "text": "beta"}\n{"id": "3", "text": "gamma"}\n')
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n1\td2\t2\n2\td3\t0\n9\td9\t1\n")
    loaded_q, loaded_r = load_queries(queries), load_qrels(qrels)
    assert loaded_q == {"1": "alpha", "2": "beta", "3": "gamma"}
    assert loaded_r == {"1": {"d1": 1, "d2": 2}, "2": {"d3": 0}, "9": {"d9": 1}}
    # only query 1 has a text and a relevant judgement
    assert evaluable_queries(loaded_q, loaded_r) == ["1"]


def test_bad_queries_line_is_a_user_error(tmp_path: Path) -> None:
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"id": "1"}\n')
    with pytest.raises(KbError, match="q.jsonl:1"):
        load_queries(bad)


def test_score_mode_averages_over_all_queries(tmp_path: Path) -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    runs = {"q1": [("a", 0.9), ("x", 0.5)], "q2": []}  # q2 found nothing: it still counts, as 0
    report = score_mode("lexical", runs, qrels, ["q1", "q2"], 10, [10.0, 30.0])
    assert report.ndcg_at_k == pytest.approx(0.5)
    assert report.recall_at_k == pytest.approx(0.5)
    assert report.mrr_at_k == pytest.approx(0.5)
    assert report.queries_without_results == 1
    run_file = tmp_path / "run.trec"
    write_trec_run(run_file, runs, "kb-lexical")
    assert run_file.read_text().splitlines() == ["q1 Q0 a 1 0.900000 kb-lexical", "q1 Q0 x 2 0.500000 kb-lexical"]
