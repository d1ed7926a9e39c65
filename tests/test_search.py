"""Search: fusion math against small in-test retrievers, then the real indexes on the fixture corpus."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb_core.app import KnowledgeBase
from kb_core.config import load_config
from kb_core.errors import KbError
from kb_core.extend.contracts import modeled_scripts
from kb_core.extend.registry import Registration, Registry
from kb_core.retrieval.search import DEFAULT_GATES, SEPARATION_FULL, fuse, fusion_weights, search, to_gate
from kb_core.types import SEARCH_MODES, Citation, Hit, SearchQuery
from kb_core.writing_systems import text_coverage


def make_hit(chunk_id: str, score: float, path: str | None = None) -> Hit:
    path = path or f"docs/{chunk_id.split('#')[0]}.md"
    return Hit(
        chunk_id=chunk_id,
        doc_path=path,
        score=score,
        rank=0,
        citation=Citation(path, 1, 2),
        snippet=f"text of {chunk_id}",
        heading_path=("H",),
        raw_score=score * 10,
    )


@attrs.define
class ListRetriever:
    """A retriever that returns a fixed ranked list (the unit under test is the fusion, not this)."""

    name: str
    mode: str
    hits: list[Hit]
    seen: list[SearchQuery] = attrs.field(factory=list)

    def search(self, query: SearchQuery) -> list[Hit]:
        self.seen.append(query)
        return self.hits[: query.k]

    def close(self) -> None:
        pass


def kb_with(tmp_path: Path, *retrievers: ListRetriever, **search_settings: object) -> KnowledgeBase:
    registry = Registry()
    # vector indexes are given the configured embedder; these fixed-list retrievers never use it
    registry.items["embedders"]["minilm"] = Registration("embedders", "minilm", lambda ctx: object(), "test")
    for r in retrievers:
        registry.items["indexes"][r.name] = Registration(
            "indexes", r.name, lambda ctx, r=r: r, "test", {"mode": r.mode}
        )
    overrides = {"indexes.enabled": [r.name for r in retrievers]}
    overrides.update({f"search.{key}": value for key, value in search_settings.items()})
    config = load_config(None, tmp_path / "kb", overrides, environ={})
    return KnowledgeBase(config, registry)


def test_hybrid_top_hit_in_both_lists_scores_its_mean_evidence(tmp_path: Path) -> None:
    lex = ListRetriever("lex", "lexical", [make_hit("a", 0.8), make_hit("b", 0.5)])
    vec = ListRetriever("vec", "vector", [make_hit("a", 0.6), make_hit("c", 0.45)])
    response = search(kb_with(tmp_path, lex, vec), SearchQuery("q", k=10, mode="hybrid"))
    assert [h.chunk_id for h in response.hits] == ["a", "b", "c"]
    assert [h.rank for h in response.hits] == [1, 2, 3]
    top = response.hits[0]
    assert top.score == pytest.approx(0.7)  # rrf_norm 1.0 x evidence mean(0.8, 0.6)
    assert top.raw_score == pytest.approx(2 / 61)
    assert top.retriever == "lex+vec"
    # b: lexical rank 2 only -> rrf_norm (1/62) / (2/61) = 0.4919..., times mean(0.5, 0)
    assert response.hits[1].score == pytest.approx(61 / 124 * 0.25)
    assert response.explanations[0].rrf_norm == pytest.approx(1.0)


def test_hybrid_off_topic_top_hit_stays_low(tmp_path: Path) -> None:
    """Rank-only normalisation would give this top hit 1.0; evidence keeps it below any sane gate."""
    lex = ListRetriever("lex", "lexical", [make_hit("a", 0.12), make_hit("b", 0.1)])
    vec = ListRetriever("vec", "vector", [make_hit("a", 0.08)])
    response = search(kb_with(tmp_path, lex, vec), SearchQuery("q", mode="hybrid"))
    assert response.hits[0].chunk_id == "a"
    assert {r.name: r.weight for r in response.retrievers} == {"lex": 1.0, "vec": 1.0}
    assert response.explanations[0].gate_from == pytest.approx(0.3)  # alike: no change of scale
    assert response.hits[0].score == pytest.approx(0.1)  # rrf_norm 1.0 x mean(0.12, 0.08)


def test_hybrid_weaker_separation_counts_less(tmp_path: Path) -> None:
    lex = ListRetriever("lex", "lexical", [make_hit("a", 0.12), make_hit("b", 0.1)])
    vec = ListRetriever("vec", "vector", [make_hit("a", 0.015)])
    response = search(kb_with(tmp_path, lex, vec), SearchQuery("q", mode="hybrid"))
    assert {r.name: r.weight for r in response.retrievers} == {"lex": 1.0, "vec": pytest.approx(0.5)}
    why = response.explanations[0]
    assert why.evidence == pytest.approx((0.12 + 0.5 * 0.015) / 1.5)
    assert 0.15 < why.gate_from < 0.3  # between the hybrid gate and the leading (lexical) one
    assert response.hits[0].score == pytest.approx(to_gate(why.rrf_norm * why.evidence, why.gate_from, 0.3))


def test_hybrid_retriever_without_evidence_gets_no_say(tmp_path: Path) -> None:
    """A vector index that scores every hit 0 (its embedder does not model the query's script) is ignored:
    hybrid ranks as lexical does, and the lexical score is put on the hybrid gate's scale."""
    lex = ListRetriever("lex", "lexical", [make_hit("a", 0.4), make_hit("b", 0.2), make_hit("c", 0.1)])
    vec = ListRetriever("vec", "vector", [make_hit(x, 0.0) for x in "zcyba"])
    response = search(kb_with(tmp_path, lex, vec), SearchQuery("q", mode="hybrid"))
    assert [h.chunk_id for h in response.hits] == ["a", "b", "c"]
    assert {r.name: r.weight for r in response.retrievers} == {"lex": 1.0, "vec": 0.0}
    gates = DEFAULT_GATES
    assert response.explanations[0].gate_from == pytest.approx(gates["lexical"])
    assert response.hits[0].score == pytest.approx(to_gate(0.4, gates["lexical"], gates["hybrid"]))
    # at the lexical gate, exactly at the hybrid gate
    assert to_gate(gates["lexical"], gates["lexical"], gates["hybrid"]) == pytest.approx(gates["hybrid"])


def test_hybrid_retriever_whose_hits_look_alike_cannot_outvote_a_separating_one(tmp_path: Path) -> None:
    """Flat scores (every hit equally near) carry no ranking evidence; the separating retriever decides."""
    lex = ListRetriever("lex", "lexical", [make_hit(f"l{i}", 0.6 - 0.05 * i) for i in range(12)])
    flat = ListRetriever("vec", "vector", [make_hit(f"l{i}", 0.72 - 0.0005 * i) for i in reversed(range(12))])
    response = search(kb_with(tmp_path, lex, flat), SearchQuery("q", k=5, mode="hybrid"))
    assert [h.chunk_id for h in response.hits] == ["l0", "l1", "l2", "l3", "l4"]
    assert {r.name: r.weight for r in response.retrievers}["vec"] < 0.2


def test_hybrid_lexical_finds_nothing_vector_decides(tmp_path: Path) -> None:
    """No query word occurs anywhere: the vector score decides, on the hybrid gate's scale."""
    lex = ListRetriever("lex", "lexical", [])
    vec = ListRetriever("vec", "vector", [make_hit("a", 0.7)])
    response = search(kb_with(tmp_path, lex, vec), SearchQuery("q", mode="hybrid"))
    assert response.hits[0].score == pytest.approx(to_gate(0.7, DEFAULT_GATES["vector"], DEFAULT_GATES["hybrid"]))


def test_rrf_k_and_fanout_come_from_config(tmp_path: Path) -> None:
    lex = ListRetriever("lex", "lexical", [make_hit(f"l{i}", 0.9) for i in range(30)])
    vec = ListRetriever("vec", "vector", [make_hit(f"l{i}", 0.9) for i in reversed(range(30))])
    response = search(kb_with(tmp_path, lex, vec, rrf_k=10, fanout=20), SearchQuery("q", k=3, mode="hybrid"))
    assert lex.seen[0].k == 20 and vec.seen[0].k == 20
    assert response.rrf_k == 10
    why = response.explanations[0]
    ranks = [c.rank for c in why.contributions]
    assert why.rrf == pytest.approx(sum(1 / (10 + r) for r in ranks))
    assert len(response.hits) == 3


def test_single_mode_passes_calibrated_scores_through(tmp_path: Path) -> None:
    lex = ListRetriever("lex", "lexical", [make_hit("a", 0.7), make_hit("b", 0.4), make_hit("a", 0.3)])
    vec = ListRetriever("vec", "vector", [make_hit("z", 0.9)])
    response = search(kb_with(tmp_path, lex, vec), SearchQuery("q", k=5, mode="lexical"))
    assert [(h.chunk_id, h.score, h.rank) for h in response.hits] == [("a", 0.7, 1), ("b", 0.4, 2)]
    assert vec.seen == []  # the vector index was not asked
    assert lex.seen[0].k == 5  # no fan-out without fusion
    assert [r.name for r in response.retrievers] == ["lex"]


def test_path_glob_is_passed_on_and_enforced(tmp_path: Path) -> None:
    lex = ListRetriever("lex", "lexical", [make_hit("a", 0.7, "notes/a.md"), make_hit("b", 0.6, "src/b.txt")])
    response = search(kb_with(tmp_path, lex), SearchQuery("q", mode="lexical", path_glob="notes/*"))
    assert lex.seen[0].path_glob == "notes/*"
    assert [h.doc_path for h in response.hits] == ["notes/a.md"]


def test_no_hits_and_bad_requests(tmp_path: Path) -> None:
    kb = kb_with(tmp_path, ListRetriever("lex", "lexical", []))
    assert search(kb, SearchQuery("q", mode="lexical")).hits == ()
    with pytest.raises(KbError, match="unknown search mode"):
        search(kb, SearchQuery("q", mode="fuzzy"))
    with pytest.raises(KbError, match="no enabled index serves vector"):
        search(kb, SearchQuery("q", mode="vector"))


ranked_lists = st.lists(
    st.lists(st.tuples(st.integers(0, 40), st.floats(-0.5, 1.5, allow_nan=False)), max_size=30),
    min_size=1,
    max_size=3,
)


@settings(max_examples=200)
@given(ranked_lists, st.integers(1, 100), st.booleans())
def test_fused_scores_are_in_unit_interval_ordered_and_unique(
    lists: list[list[tuple[int, float]]], rrf_k: int, on_gate_scale: bool
) -> None:
    results = [(f"r{i}", [make_hit(f"c{cid}", score) for cid, score in hits]) for i, hits in enumerate(lists)]
    weights = fusion_weights(results)
    gates = {name: 0.1 + 0.1 * i for i, (name, _) in enumerate(results)} if on_gate_scale else None
    fused = fuse(results, rrf_k, weights, gates, 0.3 if on_gate_scale else None)
    scores = [hit.score for hit, _ in fused]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    ids = [hit.chunk_id for hit, _ in fused]
    counted = {f"c{cid}" for (name, _), hits in zip(results, lists) if weights[name] > 0 for cid, _ in hits}
    assert len(ids) == len(set(ids)) and set(ids) == counted
    for hit, why in fused:
        assert 0.0 < why.rrf_norm <= 1.0
        expected = why.rrf_norm * why.evidence
        if on_gate_scale:
            expected = to_gate(expected, why.gate_from, 0.3)
        assert hit.score == pytest.approx(expected)


@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=5), st.integers(1, 100))
def test_chunk_first_everywhere_scores_its_weighted_mean_evidence(scores: Sequence[float], rrf_k: int) -> None:
    results = [(f"r{i}", [make_hit("top", s), make_hit(f"other{i}", 0.0)]) for i, s in enumerate(scores)]
    hit, why = fuse(results, rrf_k)[0]
    weights = [round(min(1.0, s / SEPARATION_FULL), 6) for s in scores]  # two hits: the separation is the top score
    if not any(weights):
        weights = [1.0] * len(scores)
    assert why.rrf_norm == pytest.approx(1.0)
    assert hit.score == pytest.approx(sum(w * s for w, s in zip(weights, scores)) / sum(weights))


@given(st.floats(0, 1, allow_nan=False), st.floats(0.01, 0.99), st.floats(0.01, 0.99), st.floats(0, 1, allow_nan=False))
def test_gate_mapping_is_monotone_and_lands_the_gate(value: float, source: float, target: float, other: float) -> None:
    assert to_gate(source, source, target) == pytest.approx(target)
    assert to_gate(0.0, source, target) == 0.0 and to_gate(1.0, source, target) == pytest.approx(1.0)
    low, high = sorted((value, other))
    assert to_gate(low, source, target) <= to_gate(high, source, target)


# -- the real indexes (kb-tantivy, kb-sqlitevec) on the fixture corpus -------------------------------

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "fixtures" / "corpus"
GOLDEN = REPO / "fixtures" / "golden" / "answers.jsonl"
REAL_INDEXES = '["tantivy", "sqlitevec"]'  # the CLI's indexes for the tests of the real ones (not the test indexes)
OFF_TOPIC_EN = [
    "Who won the 2018 FIFA World Cup?",
    "How do I bake sourdough bread?",
    "What is the best strategy for a chess opening?",
    "How do I file my income tax return?",
]
# The default embedder (all-MiniLM-L6-v2) is English-only: it declares so (Embedder.scripts), and the
# vector index gives Korean and Chinese questions score 0 (its similarities for them are noise).
OFF_TOPIC_CJK = ["부산의 인구는 몇 명인가요?", "上海的人口是多少？"]
OFF_TOPIC = dict.fromkeys(SEARCH_MODES, OFF_TOPIC_EN + OFF_TOPIC_CJK)


def golden_answerable() -> list[tuple[str, str]]:
    """(question, expected document path) of the answerable golden questions."""
    rows = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(row["question"], row["expected_docs"][0]) for row in rows if row["answerable"]]


@pytest.fixture(scope="module")
def corpus_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    """The fixture corpus (without its README, which restates every fact) in a KB with both real indexes."""
    from kb_core.ingest.pipeline import ingest_paths

    config = load_config(
        None,
        tmp_path_factory.mktemp("corpus") / "kb",
        {"indexes.enabled": ["tantivy", "sqlitevec"], "ingest.ignore": ["/README.md"]},
        environ={},
    )
    kb = KnowledgeBase(config)
    ingest_paths(kb, [CORPUS])
    yield kb
    kb.close()


@pytest.mark.needs_plugins
@pytest.mark.slow
@pytest.mark.parametrize("mode", SEARCH_MODES)
def test_on_topic_questions_pass_the_gate_and_find_their_document(corpus_kb: KnowledgeBase, mode: str) -> None:
    scripts = modeled_scripts(corpus_kb.embedder())
    for question, expected in golden_answerable():
        response = search(corpus_kb, SearchQuery(question, k=5, mode=mode))
        assert response.hits, question
        if mode == "vector" and text_coverage(question, scripts) == 0.0:
            # the embedder cannot read this question: no evidence, so kb ask refuses in vector mode
            assert response.hits[0].score == 0.0, question
            continue
        assert response.hits[0].score >= DEFAULT_GATES[mode], (mode, question, response.hits[0])
        assert expected in [h.doc_path for h in response.hits[:3]], (mode, question)
        assert all(0.0 <= h.score <= 1.0 for h in response.hits)


@pytest.mark.needs_plugins
@pytest.mark.slow
@pytest.mark.parametrize("mode", SEARCH_MODES)
def test_off_topic_questions_score_below_the_gate(corpus_kb: KnowledgeBase, mode: str) -> None:
    for question in OFF_TOPIC[mode]:
        response = search(corpus_kb, SearchQuery(question, k=5, mode=mode))
        top = response.hits[0].score if response.hits else 0.0
        assert top < DEFAULT_GATES[mode], (mode, question, response.hits[:1])


@pytest.mark.needs_plugins
@pytest.mark.slow
def test_hits_carry_citations_headings_and_snippets(corpus_kb: KnowledgeBase) -> None:
    response = search(corpus_kb, SearchQuery("Heliograph daemon TCP port", k=3, mode="hybrid"))
    top = response.hits[0]
    assert top.doc_path == "notes/heliograph.md"
    assert str(top.citation).startswith("notes/heliograph.md#L")
    assert top.citation.start_line <= top.citation.end_line
    assert top.snippet and top.heading_path[0] == "Heliograph"
    assert {r.name for r in response.retrievers} == {"tantivy", "sqlitevec"}
    lexical = search(corpus_kb, SearchQuery("Heliograph daemon TCP port", k=10, mode="lexical")).hits
    tantivy_hits = [h for h in response.hits if h.retriever.startswith("tantivy")]
    assert tantivy_hits and tantivy_hits[0].snippet == next(
        h.snippet for h in lexical if h.chunk_id == tantivy_hits[0].chunk_id
    ), "a kept hit's snippet is the one its lexical index makes for the query"


@pytest.mark.needs_plugins
@pytest.mark.slow
def test_kb_search_cli_human_json_and_exit_codes(
    corpus_kb: KnowledgeBase, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import jsonschema

    monkeypatch.setenv("KB_INDEXES__ENABLED", REAL_INDEXES)

    from kb_core.cli.main import main
    from kb_core.output import schema

    kb_dir = str(corpus_kb.directory)
    assert main(["--kb", kb_dir, "search", "Heliograph daemon port", "--k", "2"]) == 0
    human = capsys.readouterr().out
    assert " 1. " in human and "notes/heliograph.md#L" in human

    assert main(["--kb", kb_dir, "search", "wind speed stow angle", "--json", "--mode", "lexical"]) == 0
    payload = json.loads(capsys.readouterr().out)
    jsonschema.validate(payload, schema("search_response.v1"))
    assert payload["mode"] == "lexical" and payload["hits"][0]["rank"] == 1

    assert main(["--kb", kb_dir, "search", "stow angle wind", "--path", "ko/*", "--json"]) == 0
    assert {hit["doc_path"][:3] for hit in json.loads(capsys.readouterr().out)["hits"]} == {"ko/"}

    assert main(["--kb", kb_dir, "search", "zzqxv", "--mode", "lexical"]) == 1
    assert "no results" in capsys.readouterr().err


@pytest.mark.needs_plugins
@pytest.mark.slow
def test_kb_eval_retrieval_writes_report_run_file_and_eval_run(
    corpus_kb: KnowledgeBase, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import jsonschema

    monkeypatch.setenv("KB_INDEXES__ENABLED", REAL_INDEXES)

    from kb_core.cli.main import main
    from kb_core.output import schema

    answerable = golden_answerable()
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "text": q}) + "\n" for i, (q, _) in enumerate(answerable)))
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"q{i}\t{Path(doc).stem}\t1\n" for i, (_, doc) in enumerate(answerable))
    )
    out = tmp_path / "eval"
    code = main(
        [
            "--kb",
            str(corpus_kb.directory),
            "eval",
            "retrieval",
            "--queries",
            str(queries),
            "--qrels",
            str(qrels),
            "--mode",
            "lexical",
            "--mode",
            "hybrid",
            "--out",
            str(out),
            "--json",
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    report = json.loads((out / "report.json").read_text())
    assert printed == report
    jsonschema.validate(report, schema("retrieval_report.v1"))
    assert [m["mode"] for m in report["modes"]] == ["lexical", "hybrid"]
    assert report["num_queries"] == len(answerable)
    for mode in report["modes"]:
        assert mode["mrr_at_k"] >= 0.8 and mode["recall_at_k"] >= 0.8
    first = (out / "run.hybrid.trec").read_text().splitlines()[0].split()
    assert first[:2] == ["q0", "Q0"] and first[3] == "1"
    rows = corpus_kb.store.conn.execute(
        "SELECT kind, metrics_json FROM eval_runs WHERE run_id = ?", (report["run_id"],)
    ).fetchall()
    assert rows and rows[0][0] == "retrieval" and "hybrid" in json.loads(rows[0][1])
